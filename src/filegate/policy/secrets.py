"""Sensitive files (SPEC §2.6): matched case-insensitively, after Unicode NFC normalisation of
both pattern and path, on the resolved path.

A rule names a file or a directory; a path is sensitive when a rule matches its file name or
any directory it is under. An exception (``!.env.example``) only ever exempts a *file name*
that a rule matched: it never covers a directory of that name or anything under it, so
``.env.example/.env`` and ``.ENV.SAMPLE/id_rsa`` stay sensitive.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from filegate.policy.clientrules import ClientRules

# SPEC §2.6: Kimi's list plus the keys, dot-files and tool configs it missed.
DEFAULT_SECRET_PATTERNS: tuple[str, ...] = (
    ".env",
    ".env.*",
    "!.env.example",
    "!.env.sample",
    "!.env.template",
    ".envrc",
    "id_rsa",
    "id_dsa",
    "id_ed25519",
    "id_ecdsa",
    # suffixed variants: id_rsa_work, id_ed25519_sk, id_ecdsa-deploy
    "id_rsa_*",
    "id_rsa-*",
    "id_dsa_*",
    "id_dsa-*",
    "id_ed25519_*",
    "id_ed25519-*",
    "id_ecdsa_*",
    "id_ecdsa-*",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".pgpass",
    ".git-credentials",
    "credentials",
    "credentials.json",
    ".aws/credentials",
    ".gcp/credentials",
    ".docker/config.json",
    ".kube/config",
    ".git/config",  # remote URLs and CI checkouts keep tokens there
    # Every git config inside a VCS directory: submodules, linked worktrees, bare repositories.
    ".git/modules/**/config",
    ".git/worktrees/*/config",
    "config.worktree",
    "*.git/config",
    ".hg/hgrc",  # [paths] URLs with passwords, [auth]
    "_netrc",  # .netrc's Windows name (curl, git)
    ".yarnrc.yml",  # npmAuthToken
    ".config/gh/hosts.yml",  # the GitHub CLI's oauth_token
    "credentials.tfrc.json",  # terraform login
    # SPEC's turn-4 additions: what an outside round read through ReadFile and Grep.
    ".gitconfig",  # CI writes url.<token>.insteadOf here
    ".config/git/config",
    ".yarnrc",
    ".dockercfg",
    ".vault-token",
    ".kube/",  # every kubeconfig and cache under it
    "*.kubeconfig",
    "kubeconfig*",
    # Everything under .ssh/ but public keys, known hosts and the client config. The rule
    # names the directory's entries, not the directory, so the exceptions can lift them
    # (an exception never lifts a path under a matched directory); anything deeper stays.
    ".ssh/*",
    "!.ssh/*.pub",
    "!.ssh/known_hosts",
    "!.ssh/config",
    "ssh_host_*_key",
    "*.ppk",
    ".env-*",
    "*.env",
    # The example/sample/template exception of .env.*, for the two other spellings.
    "!.env-example",
    "!.env-sample",
    "!.env-template",
    "!example.env",
    "!sample.env",
    "!template.env",
    "!*.example.env",
    "!*.sample.env",
    "!*.template.env",
    ".my.cnf",
    ".s3cfg",
    ".boto",
    ".authinfo*",
    ".config/hub",
    "*.tfstate",
    "*.tfstate.backup",
    ".m2/settings.xml",
    ".composer/auth.json",
    ".gradle/gradle.properties",
    ".databrickscfg",
    "*.jks",
    "*.keystore",
    "secring.gpg",
    ".htpasswd",
    ".config/rclone/rclone.conf",
    # Beyond SPEC's list, the same kind (credential stores that tools write into a home
    # folder; reported to SPEC's owner): hg's user config, svn's cached passwords, cargo's
    # registry token, pnpm's global rc, terraform's CLI config, gcloud's and azure's token
    # caches, aws's SSO and CLI caches, pip's config (index URLs with tokens).
    ".hgrc",
    ".subversion/auth/",
    ".cargo/credentials.toml",
    ".config/pnpm/rc",
    ".terraformrc",
    "terraform.rc",
    "application_default_credentials.json",
    ".config/gcloud/credentials.db",
    ".config/gcloud/access_tokens.db",
    ".config/gcloud/legacy_credentials/",
    ".azure/accessTokens.json",
    ".azure/msal_token_cache.*",
    ".azure/service_principal_entries.*",
    ".aws/sso/cache/",
    ".aws/cli/cache/",
    "pip.conf",
    "pip.ini",
)


def _nfc(s: str) -> str:
    """NFC, so an NFD spelling (archives made on macOS) matches the NFC pattern and back."""
    return s if s.isascii() else unicodedata.normalize("NFC", s)


Rule = tuple[str, tuple[str, ...], str]  # (prefix, body as regex atoms, suffix)


def _glob_to_regex(pattern: str) -> Rule:
    """A gitignore-style glob → (prefix, body atoms, suffix) of a regex over a path that starts
    with '/' and ends at the string's end. Split so that rules sharing a prefix and suffix
    share them in one alternation, and their bodies share common leading atoms."""
    anchored = pattern.startswith("/")
    dir_only = pattern.endswith("/") and pattern.strip("/") != ""
    pattern = pattern.strip("/")
    out: list[str] = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        else:
            out.append(_segment_chars(pattern[i]) if pattern[i] != "[" else _char_class(pattern, i))
            i = _skip_class(pattern, i) if pattern[i] == "[" else i + 1
    # Paths are matched with a leading '/' (relative ones get one), so an unanchored rule is
    # a literal '/' first: the engine then jumps from '/' to '/' instead of trying every
    # position.
    prefix = "^/" if anchored else "/"
    return prefix, tuple(out), ("/.*$" if dir_only else "(?:/.*)?$")


def _combine(rules: list[Rule]) -> re.Pattern[str] | None:
    groups: dict[tuple[str, str], list[tuple[str, ...]]] = {}
    for prefix, body, suffix in rules:
        groups.setdefault((prefix, suffix), []).append(body)
    alternatives = [f"{p}(?:{_factored(bodies)}){s}" for (p, s), bodies in groups.items()]
    return re.compile("|".join(alternatives), re.IGNORECASE) if alternatives else None


_END = ""  # a trie key no atom can be: the body ends here


def _factored(bodies: list[tuple[str, ...]]) -> str:
    """The bodies' alternation with common leading atoms written once (a trie):
    ``.env|.envrc|.netrc`` becomes ``\\.(?:env(?:rc)?|netrc)``, so a name is compared with the
    list once, not once per rule (the shared prefixes are matched once, not per alternative)."""
    trie: dict[str, Any] = {}
    for atoms in bodies:
        node = trie
        for atom in atoms:
            node = node.setdefault(atom, {})
        node[_END] = {}
    return _emit(trie)


def _emit(node: dict[str, Any]) -> str:
    ends = _END in node
    alternatives = [atom + _emit(child) for atom, child in node.items() if atom != _END]
    if not alternatives:
        return ""
    if len(alternatives) == 1 and not ends:
        return alternatives[0]
    return f"(?:{'|'.join(alternatives)}){'?' if ends else ''}"


def _segment_chars(ch: str) -> str:
    return {"*": "[^/]*", "?": "[^/]"}.get(ch, re.escape(ch))


def _skip_class(pattern: str, i: int) -> int:
    end = pattern.find("]", i + 2)
    return end + 1 if end != -1 else i + 1


def _char_class(pattern: str, i: int) -> str:
    end = pattern.find("]", i + 2)
    if end == -1:
        return re.escape("[")
    inner = pattern[i + 1 : end]
    if inner.startswith("!"):
        inner = "^" + inner[1:]
    return "[" + inner.replace("\\", "\\\\") + "]"


_UNDER = "/.*$"  # the rule matched a directory the path is under
_AT_END = "$"  # the rule matched the path's own last part


def _with_suffix(rules: list[Rule], suffix: str) -> list[Rule]:
    return [(prefix, body, suffix) for prefix, body, _ in rules]


class _Rules:
    """One list of gitignore-style rules: includes, and exceptions that exempt a file name."""

    def __init__(self, patterns: Iterable[str]) -> None:
        include: list[Rule] = []
        exclude: list[Rule] = []
        for raw in patterns:
            p = _nfc(raw.strip())
            if not p or p.startswith("#"):
                continue
            if p.startswith("!"):
                if not p.endswith("/"):  # an exception for directories could only cover a tree
                    exclude.append(_glob_to_regex(p[1:]))
            else:
                include.append(_glob_to_regex(p))
        # Any match at all (the fast test: most paths fail it and are done).
        self.include = _combine(include)
        # A match on a directory above the last part: no exception can lift it.
        self.include_under = _combine(_with_suffix(include, _UNDER))
        # Exceptions match the last part only.
        self.exclude = _combine(_with_suffix(exclude, _AT_END))

    def match(self, path: str) -> bool:
        if self.include is None or not self.include.search(path):
            return False
        if self.exclude is None or not self.exclude.search(path):
            return True
        # An exempt file name; still sensitive if a rule matched a directory it is under.
        return self.include_under is not None and self.include_under.search(path) is not None


class SecretMatcher:
    """Decides whether a path names a sensitive file. User patterns only ever add."""

    def __init__(self, extra_patterns: Sequence[str] = (), client: ClientRules | None = None) -> None:
        self._default = _Rules(DEFAULT_SECRET_PATTERNS)
        self._extra = _Rules(extra_patterns)
        self.patterns: tuple[str, ...] = (*DEFAULT_SECRET_PATTERNS, *extra_patterns)
        # The rules users wrote for their agents (SPEC §8.5): what they hide is sensitive too.
        self.client = client

    def is_sensitive(self, path: str) -> bool:
        """``path`` is a '/'-separated path (absolute or relative); its last part is the file.
        The client rules judge absolute (resolved) paths only: a bare name is not located."""
        if self.client is not None and is_absolute(path) and self.client.read_source(path) is not None:
            return True
        path = _nfc(path)
        if not path.startswith("/"):
            path = "/" + path
        return self._default.match(path) or self._extra.match(path)

    def hidden_by(self, path: str) -> str | None:
        """The client rule file (shown) that hides ``path``, if that is why it is sensitive."""
        if self.client is None or not is_absolute(path):
            return None
        return self.client.read_source(path)

    def hidden_apart(self, paths: Iterable[str]) -> tuple[list[str], int, list[str]]:
        """Files a search left out (absolute paths), told apart (SPEC §8.5): the secrets (their
        paths, named in Kimi's sentence), how many a client rule hides (never named), and the
        rule files that hide them (shown, sorted). A path both a secret and hidden is hidden:
        its name is not said."""
        secrets: list[str] = []
        hidden, sources = 0, set()
        for path in paths:
            source = self.hidden_by(path)
            if source is None:
                secrets.append(path)
            else:
                hidden += 1
                sources.add(source)
        return secrets, hidden, sorted(sources)


def is_absolute(path: str) -> bool:
    """A POSIX absolute path, or a Windows one as the secret filter spells it (`C:/…`, `C:\\…`,
    or a share's `//server/…`, which starts with '/')."""
    return path.startswith("/") or (len(path) > 2 and path[1] == ":" and path[2] in "/\\")


def skipped_secrets_warning(names: Iterable[str], rule_sources: Sequence[str] = (), hidden: int = 0) -> str:
    """What a search says it left out: Kimi's warning sentence for the secrets (named), then
    the count of files the client rules hide (SPEC §8.5: counted, never named nor called
    credentials; the rule files named, never the rules)."""
    unique = sorted(set(names))
    n = len(unique)
    said = []
    if n:
        shown = ", ".join(unique[:5])
        if n > 5:
            shown += f", ... ({n} files total)"
        said.append(
            f"Skipped {n} sensitive file(s) ({shown}) to protect secrets. "
            "These files may contain credentials or private keys."
        )
    if hidden:
        named = ", ".join(f"`{s}`" for s in rule_sources)
        files = "1 file" if hidden == 1 else f"{hidden} files"
        said.append(f"{files} hidden from AI tools by the rules in {named}.")
    return " ".join(said)
