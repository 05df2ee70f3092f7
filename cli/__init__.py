"""The convrisk command line (Typer): `convrisk conv|risk|config|serve`; see cli/app.py."""
