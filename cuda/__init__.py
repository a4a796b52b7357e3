"""GPU variants of the edgert wheel: variant data, toolchain provisioning, the fatbinary
reader and the coverage rules. (Running from the repository root, this package shadows
NVIDIA's ``cuda`` Python packages: nothing here imports them.)"""
