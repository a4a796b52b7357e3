"""edgert's release pipeline: build, repair and verify native wheels."""

__version__ = "0.1.0"
