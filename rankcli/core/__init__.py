"""The shared numerical library: pure numpy over ``(values, offsets)``. No files, no terminals, no LightGBM."""
