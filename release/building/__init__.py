"""Building one wheel: the plan of a build (what the manifest selects, resolved for
this host), its stages (``pipeline``), the build folder, the release matrix and repair."""
