"""Coverage: does every library with device code run on every claimed compute capability?

For a GPU of compute capability X.Z, an entry runs when:
  * cubin sm_XY (plain): same major X and Z >= Y;
  * cubin sm_XYa (arch-specific): exactly X.Y;
  * cubin sm_XYf (family-specific): same major X and Z >= Y;
  * PTX compute_XY: X.Z >= X.Y, JIT-compiled by a driver that knows the PTX ISA
    (cuda/ptx_drivers.toml gives the oldest such driver).
LTO-IR is not loadable by itself and covers nothing. A library is judged per container that
has kernels (nvcc's kernel-less "dlink" container is skipped): each must cover the claim.
Unclaimed architectures in a library are errors too: the build and the claims disagree."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from cuda import device_code
from cuda.fatbin import DeviceCode, EntryKind, FatbinContainer, FatbinEntry
from cuda.gpu_variant import ComputeCapability
from cuda.record import DeviceCodeRecord
from release._toml import read_toml
from release.errors import ConfigurationError
from release.findings import Finding, Severity

CHECK = "coverage"
SASS, PTX_JIT, MISSING = "sass", "ptx-jit", "missing"
_RANK = {SASS: 0, PTX_JIT: 1, MISSING: 2}


@cache
def ptx_driver_table(path: Path | None = None) -> dict[tuple[int, int], str]:
    """PTX ISA (major, minor) -> the oldest CUDA driver version that JIT-compiles it."""
    source = path or Path(__file__).resolve().parent / "ptx_drivers.toml"
    data = read_toml(source, what="the PTX driver table", fix="restore cuda/ptx_drivers.toml")
    try:
        table = data["isa"]
        return {(int(key.split(".")[0]), int(key.split(".")[1])): str(value)
                for key, value in table.items()}
    except (KeyError, ValueError, IndexError) as error:
        raise ConfigurationError(f"cannot read the PTX driver table {source}: {error}",
                                 fix="restore cuda/ptx_drivers.toml") from None


def minimum_driver(isa: tuple[int, int]) -> str | None:
    """CUDA driver version needed to JIT PTX of this ISA, or None when the table lacks it."""
    return ptx_driver_table().get(isa)


def runs_on(entry: FatbinEntry, gpu: ComputeCapability) -> bool:
    """Whether ``entry`` can run on a GPU of compute capability ``gpu`` (see module doc)."""
    arch = ComputeCapability.from_sm(entry.sm)
    if entry.kind is EntryKind.CUBIN:
        if entry.arch_specific:
            return gpu == arch
        return gpu.major == arch.major and gpu.minor >= arch.minor
    if entry.kind is EntryKind.PTX:
        return gpu >= arch
    return False


@dataclass(frozen=True)
class Cell:
    """How one library runs on one claimed compute capability."""

    status: str                   # "sass", "ptx-jit" or "missing"
    entry: str = ""               # sm_86, compute_90...
    driver: str | None = None     # for ptx-jit: the oldest driver (CUDA version) that JITs it
    isa: tuple[int, int] | None = None

    @property
    def text(self) -> str:
        if self.status == SASS:
            return f"SASS {self.entry}"
        if self.status == PTX_JIT:
            isa = f"{self.isa[0]}.{self.isa[1]}" if self.isa else "?"
            driver = self.driver or f"unknown for PTX ISA {isa}"
            return f"PTX-JIT {self.entry} (driver >= {driver})"
        return "missing"


@dataclass(frozen=True)
class CoverageReport:
    claims: tuple[ComputeCapability, ...]
    rows: tuple[tuple[str, tuple[Cell, ...]], ...]  # (library, one cell per claim)
    findings: tuple[Finding, ...]

    @property
    def ok(self) -> bool:
        return not any(finding.severity is Severity.ERROR for finding in self.findings)

    def table(self) -> dict[str, dict[str, str]]:
        return {library: {str(claim): cell.text
                          for claim, cell in zip(self.claims, cells)}
                for library, cells in self.rows}

    def table_text(self) -> str:
        """The table as aligned text: library x claimed compute capability."""
        header = ["library"] + [str(claim) for claim in self.claims]
        lines = [header] + [[library] + [cell.text for cell in cells]
                            for library, cells in self.rows]
        widths = [max(len(line[column]) for line in lines) for column in range(len(header))]
        rendered = ("  ".join(text.ljust(width)
                              for text, width in zip(line, widths))
                    for line in lines)
        return "\n".join(text.rstrip() for text in rendered)


def _container_cell(container: FatbinContainer, gpu: ComputeCapability) -> Cell:
    sass = [entry for entry in container.entries
            if entry.kind is EntryKind.CUBIN and runs_on(entry, gpu)]
    if sass:
        best = max(sass, key=lambda entry: (entry.arch_specific, entry.sm))
        return Cell(status=SASS, entry=best.name)
    ptx = [entry for entry in container.entries
           if entry.kind is EntryKind.PTX and runs_on(entry, gpu)]
    if ptx:
        best = max(ptx, key=lambda entry: entry.sm)
        return Cell(status=PTX_JIT, entry=best.name, driver=minimum_driver(best.version),
                    isa=best.version)
    return Cell(status=MISSING)


def library_cell(code: DeviceCode, gpu: ComputeCapability) -> Cell:
    """The worst cell over the library's kernel containers (all of them must cover ``gpu``)."""
    cells = [_container_cell(container, gpu)
             for container in code.containers if container.has_kernels]
    return max(cells, key=lambda cell: _RANK[cell.status])


def _is_claimed(entry: FatbinEntry, claims: Sequence[ComputeCapability],
                ptx: Sequence[ComputeCapability]) -> bool:
    if entry.kind is EntryKind.PTX:
        return ComputeCapability.from_sm(entry.sm) in (*claims, *ptx)
    if entry.kind is EntryKind.CUBIN:
        return any(runs_on(entry, claim) for claim in claims)
    return True


def _missing(library: str, claim: ComputeCapability) -> Finding:
    return Finding(
        check=CHECK, severity=Severity.ERROR, file=library,
        what=f"no device code runs on claimed compute capability {claim}",
        why=f"kernels fail with 'no kernel image is available' on a {claim} GPU",
        fix=f"build sm_{claim.sm} (or PTX for an older capability) or drop the claim {claim}",
        details={"claim": str(claim)})


def _unclaimed(library: str, entry: FatbinEntry) -> Finding:
    return Finding(
        check=CHECK, severity=Severity.ERROR, file=library,
        what=f"ships {entry.name} code that no claimed compute capability uses",
        why="the build's code generation and the variant's claims disagree",
        fix="derive the architectures from the variant's claims, or claim this architecture",
        details={"entry": entry.name, "offset": entry.offset})


def _unknown_driver(library: str, cell: Cell) -> Finding:
    isa = f"{cell.isa[0]}.{cell.isa[1]}" if cell.isa else "?"
    return Finding(
        check=CHECK, severity=Severity.WARNING, file=library,
        what=f"{cell.entry} uses PTX ISA {isa}, which cuda/ptx_drivers.toml does not know",
        why="the minimum driver for JIT compilation cannot be reported",
        fix="add the ISA and the CUDA release that introduced it to cuda/ptx_drivers.toml")


def judge(libraries: Iterable[DeviceCode], *, claims: Sequence[ComputeCapability],
          ptx: Sequence[ComputeCapability] = ()) -> CoverageReport:
    """Judges every library that carries device code against the claims."""
    claims = tuple(sorted(set(claims)))
    rows, findings = [], []
    for code in libraries:
        kernel_containers = [c for c in code.containers if c.has_kernels]
        if not kernel_containers:
            continue
        cells = tuple(library_cell(code, claim) for claim in claims)
        rows.append((code.file, cells))
        findings += [_missing(code.file, claim)
                     for claim, cell in zip(claims, cells) if cell.status == MISSING]
        findings += [_unknown_driver(code.file, cell) for cell in set(cells)
                     if cell.status == PTX_JIT and cell.driver is None]
        seen: set[str] = set()
        for container in kernel_containers:
            for entry in container.entries:
                if entry.name not in seen and not _is_claimed(entry, claims, ptx):
                    seen.add(entry.name)
                    findings.append(_unclaimed(code.file, entry))
    if claims and not rows:
        findings.append(Finding(
            check=CHECK, severity=Severity.ERROR, file="",
            what="compute capabilities are claimed but no library carries device code",
            why="a GPU variant without kernels is a CPU wheel with a misleading name",
            fix="check that the CUDA component was built with its fatbinary embedded"))
    report = CoverageReport(claims=claims, rows=tuple(rows), findings=tuple(findings))
    table = Finding(check=CHECK, severity=Severity.INFO, file="",
                    what=f"coverage of {len(rows)} libraries with device code over "
                         f"{len(claims)} claimed compute capabilities",
                    details={"table": report.table()})
    return CoverageReport(claims=claims, rows=report.rows, findings=(*findings, table))


def check_wheel(files: Iterable[tuple[str, Path]],
                device: DeviceCodeRecord | None) -> list[Finding]:
    """Coverage findings for one wheel (what ``verify`` reports; never raises on bad input).

    ``files``: the wheel's shared libraries as (path inside the wheel, path on disk).
    ``device``: the build record's device-code section (``cuda.record.device_code_record``,
    the typed ``cuda`` object of docs/build-record.md); None for a CPU wheel, where any device
    code is an error, since nothing claims it."""
    read = device_code.read_all(files)
    return unreadable(read) + check_device_code(read.codes, device)


def unreadable(read: device_code.WheelDeviceCode) -> list[Finding]:
    """An error for each binary whose fatbinary could not be read."""
    return [Finding(check=CHECK, severity=Severity.ERROR, file=item.file,
                    what=f"unreadable fatbinary: {item.what}",
                    why="its device code cannot be judged (or loaded)", fix=item.fix)
            for item in read.unreadable]


def check_device_code(codes: Iterable[DeviceCode],
                      device: DeviceCodeRecord | None) -> list[Finding]:
    """Coverage findings for device code already read (see ``check_wheel``)."""
    carrying = [code for code in codes if code.containers]
    if device is None:
        return [Finding(
            check=CHECK, severity=Severity.ERROR, file=code.file,
            what=f"carries device code ({len(code.entries)} fatbinary entries) but the wheel "
                 "claims no compute capability",
            why="a CPU wheel should not ship GPU code; the build record and the build disagree",
            fix="build this library only for a GPU variant") for code in carrying]
    try:
        claims = tuple(ComputeCapability.parse(text, key="cuda.claims")
                       for text in device.claims)
        ptx = tuple(ComputeCapability.parse(text, key="cuda.ptx") for text in device.ptx)
    except ConfigurationError as error:
        return [Finding(check=CHECK, severity=Severity.ERROR, file="",
                        what=f"build record: {error.what}", fix=error.fix)]
    return list(judge(carrying, claims=claims, ptx=ptx).findings)
