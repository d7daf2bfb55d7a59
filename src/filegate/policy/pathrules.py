"""The platform's path rules as a value (issue 15): POSIX, or Windows' Win32 path semantics.

Policy decides on strings, so the rules are pure logic over ``posixpath`` or ``ntpath`` and run
(and are tested) on any OS; :func:`for_this_os` picks the ones of the machine filegate runs on.

What Windows adds, and what filegate decides for each (SPEC §2.3, §2.6, §2.7):

* both slash kinds, drive letters in either case: normalised (``c:/p/x`` is ``C:\\p\\x``);
* ``\\\\?\\C:\\…`` and ``\\\\?\\UNC\\server\\share\\…``: the prefix only turns off Win32
  normalisation; normalised to ``C:\\…`` / ``\\\\server\\share\\…`` and then checked like any path;
* ``\\\\.\\…`` and any other ``\\\\?\\`` (device namespace, ``GLOBALROOT``, volume GUIDs): refused;
* ``C:relative`` (a drive without a root, relative to that drive's own current directory, which
  filegate does not know): refused;
* UNC ``\\\\server\\share\\…``: only inside a workspace that itself is on that share; any other is
  refused before anything touches it (resolving it would connect to the server and offer it the
  user's NTLM credentials);
* a name with a trailing dot or space (Win32 strips them: ``.env.`` and ``.env `` open ``.env``):
  refused; the secret filter strips them as well;
* reserved device names (``CON``, ``PRN``, ``AUX``, ``NUL``, ``COM0``–``COM9``, ``LPT0``–``LPT9``,
  their superscript-digit forms, ``CONIN$``, ``CONOUT$``), with any extension: refused (not a file);
* alternate data streams (``file.txt::$DATA``, ``.env:stream``): refused; the secret filter
  judges a stream by the file it belongs to;
* 8.3 short names (``PROGRA~1``, ``ENV~1`` for ``.env``): the containment and secret checks run on
  the long real path (``realpath`` expands every existing part); a short-name-shaped part left in
  the real path (one that did not exist when it was resolved, or a real file so named) is refused,
  since the file system may take it for another file's alias;
* junctions: ``realpath`` resolves them as it resolves symlinks, so containment is decided on
  their target, and the opened handle's final path is checked again (fsio.safeopen).

Case: NTFS and APFS/HFS+ compare names without case by default; :func:`within` takes that as
a parameter (a workspace detects it per root, see ``policy.workspace``).
"""

from __future__ import annotations

import ntpath
import os
import posixpath
import re
from dataclasses import dataclass
from types import ModuleType
from typing import Literal

Flavour = Literal["posix", "nt"]

# Reserved in every directory, with any extension (Win32 before Windows 11 and still in APIs
# that take the old rules); the superscript digits count as digits there.
_RESERVED = re.compile(
    r"^(?:CON|PRN|AUX|NUL|CONIN\$|CONOUT\$|(?:COM|LPT)[0-9¹²³])(?:[ .].*)?$", re.IGNORECASE
)
# An 8.3 alias: up to six characters, a tilde and a number, an extension of up to three.
_SHORT_NAME = re.compile(r"^[^\\/:.~]{1,6}~[0-9]{1,6}(?:\.[^\\/:.]{0,3})?$")


@dataclass(frozen=True, slots=True)
class PathRules:
    """``posixpath`` or ``ntpath`` semantics, and whether names compare without case by default."""

    flavour: Flavour = "posix"

    @property
    def module(self) -> ModuleType:
        return ntpath if self.flavour == "nt" else posixpath

    @property
    def is_nt(self) -> bool:
        return self.flavour == "nt"

    @property
    def sep(self) -> str:
        return "\\" if self.is_nt else "/"

    def normalise(self, raw: str) -> str:
        """The caller's spelling with the Win32 rewrites made explicit (POSIX: unchanged)."""
        if not self.is_nt:
            return raw
        path = raw.replace("/", "\\")
        if path.startswith("\\\\?\\UNC\\"):
            path = "\\" + path[7:]
        elif re.match(r"^\\\\\?\\[A-Za-z]:\\", path):
            path = path[4:]
        if re.match(r"^[a-z]:", path):
            path = path[0].upper() + path[1:]
        return path

    def refusal(self, path: str) -> str | None:
        """Why a (normalised) caller's path is refused before any lookup, or None."""
        if not self.is_nt:
            return None
        if path.startswith(("\\\\.\\", "\\\\?\\")):
            return "names a Windows device or volume namespace, not a file path"
        drive, rest = ntpath.splitdrive(path)
        if len(drive) == 2 and not rest.startswith("\\"):
            return "is relative to a drive's own current directory; give the full path (`C:\\dir\\file`)"
        for part in rest.split("\\"):
            if part in ("", ".", ".."):
                continue
            why = _part_refusal(part)
            if why:
                return why
        return None

    def unc_share(self, path: str) -> str | None:
        """``\\\\server\\share`` (case-folded) of a UNC path, else None."""
        if not self.is_nt or not path.startswith("\\\\"):
            return None
        drive, _ = ntpath.splitdrive(path)
        return drive.casefold() if drive.startswith("\\\\") else None

    def short_name_part(self, real: str) -> str | None:
        """A part of a resolved path shaped like an 8.3 alias (Windows), else None."""
        if not self.is_nt:
            return None
        _, rest = ntpath.splitdrive(real)
        return next((p for p in rest.split("\\") if _SHORT_NAME.match(p)), None)

    def within(self, path: str, root: str, *, fold_case: bool) -> bool:
        """Component-wise containment: ``/proj-evil`` is not inside ``/proj``; a dir is inside
        itself. ``fold_case``: the file system compares names without case."""
        if self.is_nt:
            path, root = path.replace("/", "\\"), root.replace("/", "\\")
        if fold_case:
            path, root = path.casefold(), root.casefold()
        sep = self.sep
        return path == root or path.startswith(root if root.endswith(sep) else root + sep)

    def secret_key(self, path: str) -> str:
        """The '/'-separated spelling the secret matcher judges. Windows: each part as the file
        system takes it — its stream suffix cut and its trailing dots and spaces stripped — so
        ``.env:stream``, ``.ENV.`` and ``.env `` are judged as ``.env``."""
        if not self.is_nt:
            return path
        drive, rest = ntpath.splitdrive(path.replace("/", "\\"))
        parts = [_as_win32_opens(p) for p in rest.split("\\")]
        return drive.replace("\\", "/") + "/".join(parts)


def _part_refusal(part: str) -> str | None:
    if ":" in part:
        return "names an alternate data stream (`name:stream`); give the file's own path"
    if part[-1] in ". ":
        return "has a name ending in a dot or a space, which Windows strips (it would open another file)"
    if _RESERVED.match(part):
        return "is a reserved Windows device name, not a file"
    return None


def _as_win32_opens(part: str) -> str:
    if part in (".", ".."):
        return part
    return part.partition(":")[0].rstrip(". ")


POSIX = PathRules("posix")
WINDOWS = PathRules("nt")


def for_this_os(os_name: str | None = None) -> PathRules:
    """The rules of the OS filegate runs on (``os.name``, or the one given)."""
    return WINDOWS if (os_name or os.name) == "nt" else POSIX
