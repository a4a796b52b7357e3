"""Core metadata: PKG-INFO in the sdist and METADATA in the wheel, from ``[project]``.

pyproject-metadata (the PyPA library) turns every key of the ``[project]`` table of the
packaging specification into its core-metadata field, Metadata-Version 2.4: authors, keywords,
license and License-File, optional dependencies as Provides-Extra, urls, the readme...
This module adds only what the pipeline decides, and its rules:

- a key the specification does not define (a misspelling such as ``licence``) is an error,
  and so is anything the library warns about (a multi-line summary, an invalid extra name);
- ``dynamic`` stays empty: the backend computes no field;
- a variant changes the distribution name (``edgert-cu12``) and appends its run-time
  requirement to Requires-Dist, after ``dependencies``;
- ``scripts``, ``gui-scripts`` and ``entry-points`` become the wheel's entry_points.txt;
- ``license-files`` ship in the wheel's ``.dist-info/licenses/`` (PEP 639) and in the sdist;
- relative links in a Markdown readme (``docs/cuda.md``), which break on the package index,
  become absolute URLs into the repository named by the ``Source`` (or ``Repository``) entry
  of ``[project.urls]``: ``<url>/blob/main/<path>``, or ``<url>/raw/main/<path>`` for images
  (the GitHub layout). Links in code spans and fenced code blocks are left alone; a readme
  with relative links and no such URL is an error.

The text is a pure function of pyproject.toml and the files it names."""

from __future__ import annotations

import copy
import difflib
import posixpath
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pyproject_metadata
from packaging.requirements import Requirement
from pyproject_metadata import Readme, StandardMetadata
from pyproject_metadata.constants import KNOWN_PROJECT_FIELDS
from pyproject_metadata.errors import ConfigurationWarning

from release.errors import ConfigurationError

METADATA_VERSION = "2.4"
BRANCH = "main"                              # what relative readme links point into
SOURCE_LABELS = ("source", "repository", "sourcecode")   # [project.urls] labels, normalized
_IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp")


@dataclass(frozen=True)
class CoreMetadata:
    text: str                          # METADATA / PKG-INFO
    license_files: tuple[str, ...]     # relative to the project root, '/'-separated, sorted
    entry_points: str | None           # entry_points.txt; None when [project] declares none


def _one_line(text: str) -> str:
    return " ".join(text.split())


def standard(project: Mapping[str, Any], root: Path) -> StandardMetadata:
    """``[project]`` read and validated by pyproject-metadata; every problem is one
    ConfigurationError naming the key."""
    unknown = sorted(set(project) - set(KNOWN_PROJECT_FIELDS))
    if unknown:
        close = difflib.get_close_matches(unknown[0], sorted(KNOWN_PROJECT_FIELDS), n=1)
        hint = f"did you mean '{close[0]}'?" if close else "remove it;"
        raise ConfigurationError(f"unknown key project.{unknown[0]}",
                                 fix=f"{hint} [project] takes only the keys the packaging "
                                     "specification defines")
    if project.get("dynamic"):
        raise ConfigurationError(f"project.dynamic lists {project['dynamic']!r}",
                                 fix="give those keys a value in [project]; this build backend "
                                     "computes no metadata field")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfigurationWarning)
        try:
            return StandardMetadata.from_pyproject(
                {"project": dict(project)}, root, metadata_version=METADATA_VERSION,
                allow_extra_keys=False)
        except (pyproject_metadata.ConfigurationError, ConfigurationWarning) as error:
            raise ConfigurationError(f"pyproject.toml [project]: {_one_line(str(error))}",
                                     fix="correct that key in [project]") from None


@dataclass(frozen=True)
class ProjectMetadata:
    """``[project]`` validated once, when the manifest is loaded (``Manifest.metadata``):
    the library's reading of it (readme links already absolute) and the core metadata of the
    project's own distribution. A variant's distribution differs only in its name and the
    run-time requirement appended to Requires-Dist, and nothing else in the text depends on
    those two, so ``for_distribution`` renders it from the validated reading without reading
    pyproject.toml, the readme or the license files again."""

    project: Mapping[str, Any]         # the [project] table it was read from
    validated: StandardMetadata        # never changed: for_distribution renders a copy
    core: CoreMetadata                 # the project's own name, no extra requirement

    def for_distribution(self, name: str, extra_requires: Iterable[str] = ()) -> CoreMetadata:
        """The core metadata of the distribution ``name``, ``extra_requires`` appended to
        Requires-Dist after ``dependencies``."""
        extra = [Requirement(text) for text in extra_requires]
        if name == self.validated.name and not extra:
            return self.core
        with warnings.catch_warnings():
            warnings.simplefilter("error", ConfigurationWarning)
            try:   # (the copy is validated again: a distribution name must be a valid one)
                changed = replace(self.validated, name=name,
                                  dependencies=[*self.validated.dependencies, *extra])
            except (pyproject_metadata.ConfigurationError, ConfigurationWarning) as error:
                raise ConfigurationError(f"distribution {name}: {_one_line(str(error))}",
                                         fix="give the variant a valid distribution name "
                                             "(tool.release.variants)") from None
        return _render(changed)


def project_metadata(project: Mapping[str, Any], root: Path) -> ProjectMetadata:
    """Every ``[project]`` key read, checked and rendered once (manifest.parse calls this
    when the manifest is loaded, before any work)."""
    metadata = standard(project, root)
    readme = metadata.readme
    if readme is not None and readme.content_type == "text/markdown":
        where = readme.file.relative_to(root).as_posix() if readme.file else "project.readme"
        folder = posixpath.dirname(where) if readme.file else ""
        text = absolute_links(readme.text, base=source_url(metadata.urls), folder=folder,
                              where=where)
        metadata.readme = Readme(text, readme.file, readme.content_type)
    # a copy: a change made later to the manifest's table is then seen as a change
    return ProjectMetadata(project=copy.deepcopy(dict(project)), validated=metadata,
                           core=_render(metadata))


def core_metadata(project: Mapping[str, Any], root: Path, *, name: str | None = None,
                  extra_requires: Iterable[str] = ()) -> CoreMetadata:
    """The core metadata of the distribution ``name`` (default: ``project.name``) built from
    this project, with ``extra_requires`` appended to Requires-Dist (read afresh: a build
    uses the manifest's ``metadata`` instead)."""
    validated = project_metadata(project, root)
    return validated.for_distribution(validated.validated.name if name is None else name,
                                      extra_requires)


def _render(metadata: StandardMetadata) -> CoreMetadata:
    """METADATA / PKG-INFO, the license files and entry_points.txt of ``metadata``."""
    try:
        text = str(metadata.as_rfc822())
    except pyproject_metadata.ConfigurationError as error:
        raise ConfigurationError(f"pyproject.toml [project]: {_one_line(str(error))}",
                                 fix="correct that key in [project]") from None
    licenses = tuple(sorted({path.as_posix() for path in metadata.license_files or ()}))
    return CoreMetadata(text=text, license_files=licenses,
                        entry_points=_entry_points(metadata))


def _entry_points(metadata: StandardMetadata) -> str | None:
    groups = {"console_scripts": metadata.scripts, "gui_scripts": metadata.gui_scripts,
              **metadata.entrypoints}
    sections = [f"[{group}]\n" + "".join(f"{key} = {value}\n" for key, value in entries.items())
                for group, entries in groups.items() if entries]
    return "\n".join(sections) if sections else None


def source_url(urls: Mapping[str, str]) -> str | None:
    """The repository URL among ``[project.urls]``: the first Source/Repository entry."""
    for label, url in urls.items():
        if re.sub(r"[^a-z0-9]", "", label.lower()) in SOURCE_LABELS:
            return url.rstrip("/")
    return None


_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_CODE_SPAN = re.compile(r"(`+).+?\1")
_INLINE = re.compile(r"(!?\[)((?:[^\[\]]|\[[^\]]*\])*)(\]\(\s*)(<[^>\n]*>|[^\s()]+)")
_REFERENCE = re.compile(r"^( {0,3}\[[^\]]+\]:[ \t]*)(<[^>\n]*>|\S+)")


def _is_relative(target: str) -> bool:
    return bool(target) and not (_SCHEME.match(target) or target.startswith(("#", "//")))


def absolute_links(text: str, *, base: str | None, folder: str = "",
                   where: str = "the readme") -> str:
    """``text`` (Markdown) with relative link and image targets made absolute under ``base``;
    ``folder`` is where the readme lives inside the repository ("" for the root)."""

    def absolute(target: str) -> str:
        bracketed = target.startswith("<")
        inner = target[1:-1] if bracketed else target
        if not _is_relative(inner):
            return target
        if base is None:
            raise ConfigurationError(
                f"{where} links to '{inner}', a relative link that breaks on the package index",
                fix='add Source = "https://github.com/OWNER/REPO" to [project.urls]; relative '
                    "links are then made absolute")
        path = inner.lstrip("/") if inner.startswith("/") else posixpath.normpath(
            posixpath.join(folder, inner))
        kind = ("raw" if path.split("#")[0].split("?")[0].lower().endswith(_IMAGE_SUFFIXES)
            else "blob")
        url = f"{base}/{kind}/{BRANCH}/{path}"
        return f"<{url}>" if bracketed else url

    def inline(match: re.Match[str]) -> str:
        opening, label, middle, target = match.groups()
        return opening + _INLINE.sub(inline, label) + middle + absolute(target)

    def prose(part: str) -> str:
        pieces = []
        position = 0
        for span in _CODE_SPAN.finditer(part):
            pieces.append(_INLINE.sub(inline, part[position:span.start()]))
            pieces.append(span.group(0))
            position = span.end()
        pieces.append(_INLINE.sub(inline, part[position:]))
        return "".join(pieces)

    lines = []
    fence: str | None = None
    for line in text.splitlines(keepends=True):
        opened = _FENCE.match(line)
        if fence is not None:
            closing = line.strip()
            if opened and set(closing) == {fence[0]} and len(closing) >= len(fence):
                fence = None
            lines.append(line)
        elif opened:
            fence = opened.group(1)
            lines.append(line)
        else:
            reference = _REFERENCE.match(line)
            if reference:
                line = (reference.group(1) + absolute(reference.group(2)) +
                    line[reference.end():])
                lines.append(line)
            else:
                lines.append(prose(line))
    return "".join(lines)
