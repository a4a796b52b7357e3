"""The tools a build runs and where they come from: running commands (``commands``), the
pinned versions (``pins``, pinned-tools.toml), the tool cache, provisioning (``tools``) and
zig, the cross compiler."""
