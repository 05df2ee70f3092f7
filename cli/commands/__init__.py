"""The command groups of `convrisk`: one thin module per noun or command, as gh's pkg/cmd/<noun>."""
