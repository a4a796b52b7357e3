"""GPU variants of the edgert wheel: variant data, toolchain provisioning, the fatbinary
reader and the coverage rules. As a variant provider (``provider = "cuda"`` in
[tool.release.variants.*], see release/variants.py) it offers ``build_variant(config)`` and
``CHECKS``. (Running from the repository root, this package shadows NVIDIA's ``cuda``
Python packages: nothing here imports them.)"""

from cuda.provider import CHECKS, build_variant

__all__ = ["CHECKS", "build_variant"]
