"""python -m edgert --cmake-prefix-path | --cmake-dir | --pkg-config-path | --include-dir |
--lib-dir | --version | --operators"""

from __future__ import annotations

import argparse

import edgert


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m edgert", description=__doc__)
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--cmake-prefix-path", action="store_true",
                       help="a CMAKE_PREFIX_PATH entry under which find_package(edgert) finds it")
    group.add_argument("--cmake-dir", action="store_true", help="folder of edgertConfig.cmake")
    group.add_argument("--pkg-config-path", action="store_true",
                       help="a PKG_CONFIG_PATH entry holding edgert.pc")
    group.add_argument("--include-dir", action="store_true", help="folder of the C/C++ headers")
    group.add_argument("--lib-dir", action="store_true", help="folder of the shared libraries")
    group.add_argument("--version", action="store_true", help="edgert version")
    group.add_argument("--operators", action="store_true",
                       help="the operators installed, their components and the PyTorch "
                            "operators lowered to each (a markdown table)")
    arguments = parser.parse_args(argv)
    if arguments.version:
        print(edgert.__version__)
    elif arguments.operators:
        from edgert._operator_table import operator_table
        print(operator_table(edgert.operators()), end="")
    elif arguments.cmake_prefix_path:
        print(edgert.lib_dir().parent)
    elif arguments.cmake_dir:
        print(edgert.cmake_dir())
    elif arguments.pkg_config_path:
        print(edgert.lib_dir() / "pkgconfig")
    elif arguments.include_dir:
        print(edgert.include_dir())
    else:
        print(edgert.lib_dir())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
