"""One module per ``mha`` verb: parse options, call one core function, render."""
