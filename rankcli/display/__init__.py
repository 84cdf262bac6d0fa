"""How results are shown, shared by the render modules of the command libraries: plot (the PNG plots and text
sparklines; the one module that imports matplotlib). Only render modules and cli import this package."""
