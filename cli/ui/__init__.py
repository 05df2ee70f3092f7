"""The Textual browser of `convrisk ui` and its rows."""
