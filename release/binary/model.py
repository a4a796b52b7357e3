"""Format-neutral description of a shared library, executable or object file.

ELF fills every field today. The names are chosen so Mach-O and PE readers can fill the same
type: ``needed`` is DT_NEEDED / LC_LOAD_DYLIB / the PE import table, ``soname`` is DT_SONAME /
the install name (LC_ID_DYLIB), ``runpath`` is DT_RUNPATH / LC_RPATH, ``rpath`` is ELF's
inherited DT_RPATH (empty elsewhere). ``delay_needed`` (PE delay-load imports) are loaded on
first use, not when the file loads; ``subsystem`` is PE's (windows_gui, windows_cui...).
Mach-O also fills ``needed_paths`` (the install names as written), ``architectures`` (the
slices of a fat file) and ``unsigned`` (release/binary/macho.py says how)."""

from __future__ import annotations

import mmap
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

# Symbol bindings and visibilities, as words shared by every format.
GLOBAL = "global"
WEAK = "weak"
LOCAL = "local"
UNIQUE = "unique"
DEFAULT = "default"
HIDDEN = "hidden"
PROTECTED = "protected"
INTERNAL = "internal"


@dataclass(frozen=True)
class Section:
    name: str
    offset: int      # file offset of the section's bytes
    size: int        # bytes in the file (0 for sections without file contents, e.g. .bss)
    kind: int = 0    # format-specific type (ELF sh_type)
    address: int = 0


class Symbol(NamedTuple):
    """One symbol table entry. A tuple, not a dataclass: a large library has a few hundred
    thousand, made while the wheel streams and kept for the whole run."""

    name: str
    binding: str          # GLOBAL, WEAK, LOCAL, UNIQUE
    visibility: str       # DEFAULT, HIDDEN, PROTECTED, INTERNAL
    defined: bool         # False: the object imports it
    kind: str = "notype"  # func, object, tls, ifunc, section, file, notype
    version: str = ""     # symbol version ("GLIBC_2.17") when the file carries versions

    @property
    def exported(self) -> bool:
        """Defined, globally visible and strong: the loader may bind other objects to it."""
        return (self.defined and self.binding in (GLOBAL, UNIQUE)
                and self.visibility in (DEFAULT, PROTECTED))


@dataclass(frozen=True)
class VersionRequirement:
    library: str               # the file that must provide the versions ("libc.so.6")
    versions: tuple[str, ...]  # "GLIBC_2.17", "GLIBCXX_3.4.29"...


@dataclass(frozen=True)
class BinaryInfo:
    format: str                 # "elf", "pe", "macho"
    machine: str                # "x86_64", "aarch64", "arm64", "universal2" (a fat file)...
    bits: int
    little_endian: bool
    # "shared", "executable", "relocatable", "core", "other"; Mach-O also "bundle" (MH_BUNDLE)
    file_type: str
    size: int                   # bytes in the file
    needed: tuple[str, ...] = ()
    soname: str = ""
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    dynamic_flags: int = 0      # DT_FLAGS
    sections: tuple[Section, ...] = ()
    dynamic_symbols: tuple[Symbol, ...] = ()
    symbols: tuple[Symbol, ...] = ()  # the static symbol table (.symtab), when asked for
    version_requirements: tuple[VersionRequirement, ...] = ()
    section_data: Mapping[str, bytes] = field(default_factory=dict)  # sections asked for
    delay_needed: tuple[str, ...] = ()  # loaded on first use (PE delay-load imports)
    subsystem: str = ""         # PE: the subsystem the image runs in ("windows_cui")
    # Where the format writes a needed library as a path (Mach-O install names such as
    # "@rpath/libz.1.dylib"), every one as written; ``needed`` then holds what the loader
    # searches its folders for. Empty for formats that name libraries only (ELF).
    needed_paths: tuple[str, ...] = ()
    architectures: tuple[str, ...] = ()   # each slice's machine, for a fat (universal) file
    # the machines (slices) without a code signature, where the format signs code (Mach-O)
    unsigned: tuple[str, ...] = ()
    bad_signatures: tuple[str, ...] = ()  # ... whose signature does not match their bytes
    # Mach-O: linked for the two-level namespace (each imported symbol is bound to the
    # library it was linked against, not looked up by name in every loaded image)
    two_level_namespace: bool = False
    # Who published the file, where the format records it: a PE version resource's
    # CompanyName, a Mach-O code signature's team identifier ("" when not recorded)
    vendor: str = ""

    def section(self, name: str) -> Section | None:
        return next((section for section in self.sections if section.name == name), None)

    @property
    def required_versions(self) -> tuple[str, ...]:
        return tuple(version for requirement in self.version_requirements
                     for version in requirement.versions)


class BinaryReader(Protocol):
    """One binary format. ``matches`` looks at the first bytes; ``read`` parses the file."""

    name: str

    def matches(self, head: bytes) -> bool: ...

    def read(self, data: bytes | mmap.mmap, *, where: str, sections: Collection[str] = (),
             static_symbols: bool = False) -> BinaryInfo: ...
