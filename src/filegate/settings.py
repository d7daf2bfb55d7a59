"""Every knob filegate has: one model, filled from flags and ``FILEGATE_*`` variables."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from filegate.charsets import RefusedCodec, allowed_codec

Transport = Literal["stdio", "http"]
ApprovalMode = Literal["ask", "strict", "auto", "ask-always"]
ClientPreset = Literal["kimi", "kimi-code", "claude-desktop", "claude-code", "codex", "gemini-cli", "generic"]
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
EditMatch = Literal["tolerant", "exact"]

# Claude Desktop refuses a tool result over 1 MiB; base64 counts toward it.
DEFAULT_RESULT_BUDGET = 1 << 20

# The settings only an HTTP server uses: given with stdio they would do nothing, so a flag is
# refused (flags.py) and a variable named in the start-up line (server/startup.py), SPEC §5.
HTTP_ONLY = (
    "host", "port", "path", "token", "allowed_origins", "allowed_hosts",
    "max_connections", "max_sessions", "session_idle_timeout", "grant_ttl",
)  # fmt: skip


def _split_list(value: object, sep: str) -> object:
    """An environment list: a JSON array, or items joined by ``sep``; flags arrive as lists."""
    if not isinstance(value, str):
        return value
    if value.lstrip().startswith("["):
        return json.loads(value)
    return [part.strip() for part in value.split(sep) if part.strip()]


_BYTE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_AGE_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def _with_unit(value: object, units: dict[str, int]) -> object:
    """``"500M"``, ``"2g"``, ``"36h"``, ``"14d"`` → a number (bytes, seconds); others as given."""
    if not isinstance(value, str):
        return value
    text = (
        value.strip().lower().removesuffix("ib").removesuffix("b")
        if units is _BYTE_UNITS
        else value.strip().lower()
    )
    unit = text[-1:] if text[-1:].isalpha() else ""
    if unit not in units:
        raise ValueError(f"unknown unit {unit!r} (use one of {', '.join(u for u in units if u)})")
    number = text[: len(text) - len(unit)].strip()
    try:
        amount = float(number)
    except ValueError:
        raise ValueError(f"{value!r} is not a number with an optional unit") from None
    return int(amount * units[unit]) if units is _BYTE_UNITS else amount * units[unit]


class Settings(BaseSettings):
    """filegate's configuration. Flags win over environment variables."""

    model_config = SettingsConfigDict(
        env_prefix="FILEGATE_",
        env_file=None,  # never read a .env from the user's directory
        extra="forbid",
        frozen=True,
    )

    workdir: Path = Field(default_factory=Path.cwd)
    add_dirs: Annotated[list[Path], NoDecode] = Field(default_factory=list)
    confine: bool | None = None
    secret_patterns: Annotated[list[str], NoDecode] = Field(default_factory=list)
    transport: Transport = "stdio"
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    path: str = "/mcp"
    token: SecretStr | None = None
    # Replicas (issue 13): the key that seals 2026-07-28 approval state, shared by every replica
    # so one accepts an answer to another's question. Unset: a per-process key.
    state_key: SecretStr | None = Field(default=None, min_length=16)
    allowed_origins: Annotated[list[str], NoDecode] = Field(default_factory=list)
    allowed_hosts: Annotated[list[str], NoDecode] = Field(default_factory=list)
    log_level: LogLevel = "WARNING"
    approval: ApprovalMode = "ask"
    read_only: bool = False
    # Edits and overwrites need a ReadFile of the file since it last changed (SPEC §4).
    read_guard: bool = True
    # SPEC §8.1: how a file that is not UTF-8 and declares no charset is decoded: a codec name
    # (cp1252, gb18030, shift_jis, ...), "auto" (a detector's confident guess), or None (U+FFFD).
    legacy_encoding: str | None = None
    # StrReplaceFile's matching ladder (SPEC §8.2); "exact" turns it off for the server.
    edit_match: EditMatch = "tolerant"
    # The rules users wrote for their agents bind filegate too (SPEC §8.5): .cursorignore & co.,
    # Claude Code's permissions.deny/ask. Off: none of them is read.
    client_rules: bool = True
    client: ClientPreset | None = None
    # SPEC §9: tools declare Claude Code's `anthropic/alwaysLoad` and a search hint (loaded in
    # the first request); True leaves them to the client's tool search.
    defer_tools: bool = False
    result_budget: int | None = Field(default=None, ge=1024)
    image_max_side: int = Field(default=2048, ge=16, le=16384)
    # HTTP under abuse (server/connections.py, server/http.py). Connections: the cap is also
    # kept below the process's descriptor limit, so accept() never runs out of descriptors.
    max_connections: int = Field(default=256, ge=8, le=65536)
    # Handshake-era sessions (each holds its roots and session approvals): at most this many
    # at once, and one with no request in flight for this many seconds ends.
    max_sessions: int = Field(default=64, ge=1, le=100000)
    session_idle_timeout: float = Field(default=900.0, gt=0, le=7 * 86400)
    # The write history (SPEC §8.4): pre-images kept in the state directory, bounded.
    history: Literal["on", "off"] = "on"
    history_max_bytes: int = Field(default=1 << 30, ge=0)
    history_max_age: float = Field(default=14 * 86400.0, gt=0)
    # SPEC §11: how long a grant handle given to a 2026-07-28 HTTP client holds (a session's
    # grants last as long as the session).
    grant_ttl: float = Field(default=30 * 60.0, ge=1, le=7 * 86400)

    @field_validator("history_max_bytes", mode="before")
    @classmethod
    def _bytes_with_unit(cls, value: object) -> object:
        return _with_unit(value, _BYTE_UNITS)

    @field_validator("history_max_age", "grant_ttl", mode="before")
    @classmethod
    def _age_with_unit(cls, value: object) -> object:
        return _with_unit(value, _AGE_UNITS)

    @field_validator("workdir", mode="before")
    @classmethod
    def _workdir_not_empty(cls, value: object) -> object:
        # Path("") is Path("."): an empty value would silently serve wherever filegate started.
        if isinstance(value, str) and not value.strip():
            raise ValueError(_EMPTY_DIR)
        return value

    @field_validator("add_dirs", mode="before")
    @classmethod
    def _dirs_from_env(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            raise ValueError(_EMPTY_DIR)
        if isinstance(value, list) and any(isinstance(v, str) and not v.strip() for v in value):
            raise ValueError(_EMPTY_DIR)
        return _split_list(value, os.pathsep)  # like PATH: /a:/b

    @field_validator("secret_patterns", "allowed_origins", "allowed_hosts", mode="before")
    @classmethod
    def _items_from_env(cls, value: object) -> object:
        return _split_list(value, ",")  # URLs hold ':'; patterns with ',' need the JSON form

    @field_validator("legacy_encoding")
    @classmethod
    def _known_codec(cls, value: str | None) -> str | None:
        if value is None or value.lower() == "auto":
            return value and value.lower()
        try:
            allowed_codec(value)
        except RefusedCodec as no:
            raise ValueError(
                f"{no.at('--legacy-encoding').sentence()} Use a codec such as cp1252, gb18030, "
                "shift_jis or auto."
            ) from None
        return value

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper_level(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value

    @field_validator("path")
    @classmethod
    def _path_starts_with_slash(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("must start with '/'")
        return value

    @field_validator("workdir", "add_dirs", mode="after")
    @classmethod
    def _real_directories(cls, value: Path | list[Path]) -> Path | list[Path]:
        paths = value if isinstance(value, list) else [value]
        real: list[Path] = []
        for p in paths:
            resolved = Path(os.path.realpath(p.expanduser()))
            if resolved.is_file():
                raise ValueError(f"{p} is a file, not a folder; give the folder to serve (maybe its parent)")
            if not resolved.is_dir():
                raise ValueError(f"{p} does not exist or is not a folder; give an existing folder")
            real.append(resolved)
        return real if isinstance(value, list) else real[0]

    @model_validator(mode="after")
    def _token_for_public_bind(self) -> Settings:
        if self.transport == "http" and not _is_loopback(self.host) and self.token is None:
            raise ValueError(
                f"refusing to serve HTTP on {self.host} without a token: "
                "set --token or FILEGATE_TOKEN, or bind 127.0.0.1"
            )
        return self

    @property
    def confined(self) -> bool:
        """``--confine`` as given, else on for HTTP (a network endpoint serves its workspace only)."""
        return self.confine if self.confine is not None else self.transport == "http"


_EMPTY_DIR = "the value is empty; give a folder (an empty value is never taken as the current folder)"


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class StartError(Exception):
    """The server cannot start as configured (e.g. its port is taken); the message is one line."""
