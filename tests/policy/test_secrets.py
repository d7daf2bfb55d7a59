"""Secret matching (SPEC §2.6) at its seam: every default entry both ways, exceptions on the
file name only, NFC on both sides, user patterns that only ever add."""

from __future__ import annotations

import unicodedata

import pytest

from filegate.policy.secrets import DEFAULT_SECRET_PATTERNS, SecretMatcher, skipped_secrets_warning

# Each SPEC §2.6 entry: paths it must catch (case variants, deep, absolute, under a directory
# of that name) and near misses it must leave alone.
SPEC_ENTRIES: dict[str, tuple[list[str], list[str]]] = {
    ".env": ([".env", "a/.ENV", "/home/u/proj/.Env", ".env/anything.txt"], ["env", "a.envy", ".venv", "x/.envy"]),
    ".env.*": ([".env.local", "deep/dir/.ENV.Production", "my-1-dir/.env.local", ".env.example.bak"], [".envy", "env.local", "x.env.local"]),
    "!.env.example/.sample/.template (file name only)": (
        [".env.example/.env", ".ENV.SAMPLE/id_rsa", ".env.template/readme.md", "a/.env.example/b/c.txt"],
        [".env.example", "a/.env.sample", ".ENV.TEMPLATE", "/abs/dir/.Env.Example"],
    ),
    ".envrc": ([".envrc", "x/.ENVRC"], ["envrc", ".envrc.sample", "x.envrc"]),
    "id_rsa": (["id_rsa", "/home/u/.ssh/ID_RSA"], ["id_rsa.pub", "xid_rsa", "id_rsa2"]),
    "id_dsa": (["id_dsa", "k/id_dsa"], ["id_dsa.pub", "my_id_dsa"]),
    "id_ed25519": (["id_ed25519", "x/id_ed25519"], ["id_ed25519.pub", "id_ed25519x"]),
    "id_ecdsa": (["id_ecdsa", "x/Id_Ecdsa"], ["id_ecdsa.pub", "aid_ecdsa"]),
    "suffixed keys": (
        ["id_rsa_work", "id_rsa-github", "id_dsa_2019", "id_dsa-old", "id_ed25519_sk", "k/id_ed25519-ci",
         "x/ID_ECDSA_deploy", "id_ecdsa-sk"],
        ["id_rsawork", "id_rsa.pub", "my_id_rsa_work"],
    ),
    "*.pem": (["server.pem", "a/b/ca.PEM"], ["pem", "x.pem.txt", "pem.md"]),
    "*.key": (["tls/private.KEY", "x.key"], ["keyboard.txt", "monkey", "key", "a.key.md"]),
    "*.p12": (["cert.p12", "a/B.P12"], ["p12", "cert.p12.txt", "x.p1"]),
    "*.pfx": (["cert.pfx", "a/B.PFX"], ["pfx", "cert.pfx.bak", "xpfx"]),
    ".netrc": ([".netrc", "/home/u/.NETRC"], ["netrc", ".netrc.md"]),
    ".npmrc": ([".npmrc", "web/.npmrc"], ["npmrc", "x.npmrc"]),
    ".pypirc": ([".pypirc", "/home/u/.PyPIRC"], ["pypirc", ".pypirc.txt"]),
    ".pgpass": ([".pgpass", "x/.PGPASS"], ["pgpass", ".pgpass.md"]),
    ".git-credentials": ([".git-credentials", "/home/u/.GIT-CREDENTIALS"], ["git-credentials", ".git-credentials.md"]),
    "credentials": (["credentials", "a/CREDENTIALS", "credentials/x.txt"], ["credentials.txt", "mycredentials"]),
    "credentials.json": (["credentials.json", "gcp/Credentials.JSON"], ["my-credentials.json", "credentials_json", "credentials.json5"]),
    ".aws/credentials": (["/home/u/.aws/credentials", ".AWS/Credentials"], [".aws/config", "aws/creds"]),
    ".gcp/credentials": ([".gcp/credentials", "/h/.gcp/CREDENTIALS"], [".gcp/readme", "gcp/cred"]),
    ".docker/config.json": (["/home/u/.docker/config.json", ".Docker/Config.json"], ["config.json", "docker/config.json", ".docker/daemon.json"]),
    ".kube/config": (["/home/u/.kube/config", ".KUBE/CONFIG"], ["kube/config", "config", "kube/cache.json"]),
    ".git/config": (["repo/.git/config", "/w/.GIT/Config"], [".git/HEAD", "git/config", "src/config", ".gitconfig.md"]),
    # Issue 22: every git config in a VCS directory, and the other tools' credential files.
    ".git/modules/**/config": (["r/.git/modules/sub/config", "r/.GIT/Modules/a/modules/b/CONFIG"], ["r/.git/modules/sub/HEAD", "r/git/modules/sub/config"]),
    ".git/worktrees/*/config": (["r/.git/worktrees/wt/config", "/w/.git/WORKTREES/x/Config"], ["r/.git/worktrees/wt/HEAD", "r/worktrees/wt/config"]),
    "config.worktree": (["r/.git/config.worktree", "x/CONFIG.WORKTREE"], ["config.worktrees", "worktree.config"]),
    "*.git/config": (["srv/project.git/config", "/srv/P.GIT/CONFIG"], ["srv/project.git/HEAD", "srv/project/config", "project.git"]),
    ".hg/hgrc": (["r/.hg/hgrc", "r/.HG/HGRC"], ["r/.hg/store", "hg/hgrc"]),
    "_netrc": (["_netrc", "C:/Users/u/_NETRC"], ["netrc", "_netrc.txt"]),
    ".yarnrc.yml": ([".yarnrc.yml", "web/.YARNRC.YML"], [".yarnrc.md", "yarnrc.yml"]),
    ".config/gh/hosts.yml": (["/home/u/.config/gh/hosts.yml", ".CONFIG/GH/Hosts.yml"], [".config/gh/config.yml", "gh/hosts.yml"]),
    "credentials.tfrc.json": (["/home/u/.terraform.d/credentials.tfrc.json", "CREDENTIALS.TFRC.JSON"], ["credentials.tfrc", "tfrc.json"]),
    ".hgrc": (["/home/u/.hgrc", ".HGRC"], ["hgrc", ".hgrc.md"]),
    ".subversion/auth/": (["/home/u/.subversion/auth/svn.simple/5671", ".Subversion/Auth/x"], ["/home/u/.subversion/config", ".subversion/auth"]),
    ".cargo/credentials.toml": (["/home/u/.cargo/credentials.toml", ".CARGO/Credentials.TOML"], [".cargo/config.toml", "credentials.toml"]),
    ".config/pnpm/rc": (["/home/u/.config/pnpm/rc", ".CONFIG/PNPM/RC"], ["pnpm/rc", ".config/pnpm/store"]),
    ".terraformrc": (["/home/u/.terraformrc", ".TERRAFORMRC"], ["terraformrc", ".terraformrc.example"]),
    "terraform.rc": (["C:/Users/u/AppData/terraform.rc", "TERRAFORM.RC"], ["terraform.rc.md", "main.tf"]),
    "application_default_credentials.json": (["/h/.config/gcloud/application_default_credentials.json", "APPLICATION_DEFAULT_CREDENTIALS.JSON"], ["default_credentials.json"]),
    ".config/gcloud/credentials.db": (["/h/.config/gcloud/credentials.db", ".CONFIG/GCLOUD/Credentials.DB"], [".config/gcloud/configurations/config_default"]),
    ".config/gcloud/access_tokens.db": (["/h/.config/gcloud/access_tokens.db"], ["access_tokens.db"]),
    ".config/gcloud/legacy_credentials/": (["/h/.config/gcloud/legacy_credentials/me@x.com/adc.json"], [".config/gcloud/logs/x.log"]),
    ".azure/accessTokens.json": (["/h/.azure/accessTokens.json", ".AZURE/ACCESSTOKENS.JSON"], [".azure/config", "accessTokens.json"]),
    ".azure/msal_token_cache.*": (["/h/.azure/msal_token_cache.json", ".azure/MSAL_TOKEN_CACHE.BIN"], ["msal_token_cache.json", ".azure/azureProfile.json"]),
    ".azure/service_principal_entries.*": (["/h/.azure/service_principal_entries.json", ".azure/service_principal_entries.bin"], ["service_principal_entries.json"]),
    ".aws/sso/cache/": (["/h/.aws/sso/cache/0f1e.json", ".AWS/SSO/CACHE/x.json"], [".aws/config", "sso/cache/x.json"]),
    ".aws/cli/cache/": (["/h/.aws/cli/cache/3a4b.json"], ["cli/cache/x.json", ".aws/cli/alias"]),
    "pip.conf": (["/h/.config/pip/pip.conf", "/etc/PIP.CONF"], ["pip.conf.md", "pip.config"]),
    "pip.ini": (["C:/Users/u/pip/pip.ini", "PIP.INI"], ["pip.ini.bak", "setup.ini"]),
    # Issue 41 (SPEC's turn 4): what an outside round read through ReadFile and Grep.
    ".gitconfig": (["/home/u/.gitconfig", "x/.GITCONFIG"], ["gitconfig", ".gitconfig.md", ".gitconfig.d/readme"]),
    ".config/git/config": (["/home/u/.config/git/config", ".CONFIG/Git/Config"], [".config/git/ignore", "git/config"]),
    ".yarnrc": (["/home/u/.yarnrc", "web/.YARNRC"], ["yarnrc", ".yarnrc.md"]),
    ".dockercfg": (["/home/u/.dockercfg", ".DOCKERCFG"], ["dockercfg", ".dockercfg.md"]),
    ".vault-token": (["/home/u/.vault-token", ".VAULT-TOKEN"], ["vault-token", ".vault-token.md"]),
    ".kube/": (["/home/u/.kube/prod/config", ".KUBE/cache/discovery/x.json", "h/.kube/staging"], ["kube/x", ".kube", ".kubectl/x"]),
    "*.kubeconfig": (["ci/prod.kubeconfig", "X.KUBECONFIG"], ["prod.kubeconfig.md", "kube.config"]),
    "kubeconfig*": (["kubeconfig", "ci/KUBECONFIG-staging", "kubeconfig.yaml"], ["my-kubeconfig", "kube-config"]),
    ".ssh/*": (["/home/u/.ssh/deploy", ".SSH/github_ci", "h/.ssh/authorized_keys", "h/.ssh/sub/known_hosts"],
               ["/home/u/.ssh/id_ed25519.pub", ".SSH/Deploy.PUB", "h/.ssh/known_hosts", "h/.ssh/config", "ssh/deploy", ".ssh"]),
    "ssh_host_*_key": (["/etc/ssh/ssh_host_ed25519_key", "SSH_HOST_RSA_KEY"], ["/etc/ssh/ssh_host_rsa_key.pub", "ssh_host_key.md"]),
    "*.ppk": (["putty/server.ppk", "A.PPK"], ["ppk", "x.ppk.md"]),
    ".env-*": ([".env-prod", "x/.ENV-Staging"], [".env-example", ".env-sample", "a/.ENV-TEMPLATE", "env-prod"]),
    "*.env": (["prod.env", "config/Local.ENV", "envs/dev.env/x"], ["example.env", "a/SAMPLE.env", "template.env", "app.example.env",
              "web.sample.env", "x.template.env", "prod.envy"]),
    ".my.cnf": (["/home/u/.my.cnf", ".MY.CNF"], ["my.cnf", ".my.cnf.md"]),
    ".s3cfg": (["/home/u/.s3cfg", ".S3CFG"], ["s3cfg", ".s3cfg.md"]),
    ".boto": (["/home/u/.boto", ".BOTO"], ["boto", "x.boto.md"]),
    ".authinfo*": (["/home/u/.authinfo", ".AUTHINFO.GPG"], ["authinfo", "x.authinfo"]),
    ".config/hub": (["/home/u/.config/hub", ".CONFIG/HUB"], ["hub", ".config/hubx"]),
    "*.tfstate": (["infra/terraform.tfstate", "X.TFSTATE"], ["tfstate", "x.tfstate.md"]),
    "*.tfstate.backup": (["infra/terraform.tfstate.backup", "X.TFSTATE.BACKUP"], ["x.tfstate.backup.md"]),
    ".m2/settings.xml": (["/home/u/.m2/settings.xml", ".M2/Settings.XML"], ["settings.xml", ".m2/repository/x.pom"]),
    ".composer/auth.json": (["/home/u/.composer/auth.json", ".COMPOSER/Auth.JSON"], ["auth.json", ".composer/composer.json"]),
    ".gradle/gradle.properties": (["/home/u/.gradle/gradle.properties", ".GRADLE/Gradle.Properties"], ["gradle.properties", ".gradle/caches/x"]),
    ".databrickscfg": (["/home/u/.databrickscfg", ".DATABRICKSCFG"], ["databrickscfg", ".databrickscfg.md"]),
    "*.jks": (["android/release.jks", "X.JKS"], ["jks", "x.jks.md"]),
    "*.keystore": (["android/debug.keystore", "X.KEYSTORE"], ["keystore", "x.keystore.md"]),
    "secring.gpg": (["/home/u/.gnupg/secring.gpg", "SECRING.GPG"], ["pubring.gpg", "secring.gpg.md"]),
    ".htpasswd": (["www/.htpasswd", ".HTPASSWD"], ["htpasswd", ".htpasswd.md"]),
    ".config/rclone/rclone.conf": (["/home/u/.config/rclone/rclone.conf", ".CONFIG/RCLONE/Rclone.Conf"], ["rclone.conf", ".config/rclone/x"]),
}  # fmt: skip

MATCHES = [(entry, path) for entry, (yes, _) in SPEC_ENTRIES.items() for path in yes]
NEAR_MISSES = [(entry, path) for entry, (_, no) in SPEC_ENTRIES.items() for path in no]


@pytest.mark.parametrize(("entry", "path"), MATCHES)
def test_every_spec_entry_catches_its_names(entry: str, path: str) -> None:
    assert SecretMatcher().is_sensitive(path), entry


@pytest.mark.parametrize(("entry", "path"), NEAR_MISSES)
def test_every_spec_entry_leaves_its_near_misses_alone(entry: str, path: str) -> None:
    assert not SecretMatcher().is_sensitive(path), entry


def test_every_default_pattern_is_named_by_a_spec_entry_test() -> None:
    """A pattern added to the default list without a test here fails this."""
    tested = {p for yes, _ in SPEC_ENTRIES.values() for p in yes}
    for pattern in DEFAULT_SECRET_PATTERNS:
        if pattern.startswith("!"):
            continue
        probe = SecretMatcher([pattern])._extra  # the pattern on its own (rules see a leading '/')
        assert any(probe.match(p if p.startswith("/") else f"/{p}") for p in tested), pattern


def test_an_exception_exempts_only_a_file_name_in_user_rules_too() -> None:
    m = SecretMatcher(["*.txt", "!ok.txt"])
    assert not m.is_sensitive("a/ok.txt")
    assert m.is_sensitive("docs.txt/ok.txt")  # a directory the rules name: everything under it
    assert m.is_sensitive("a/notok.txt")


def test_an_exception_for_a_directory_never_exempts_anything() -> None:
    m = SecretMatcher(["vault/", "!vault/"])
    assert m.is_sensitive("vault/x")


def test_nfc_pattern_catches_the_nfd_spelling_and_back() -> None:
    nfc, nfd = "caf\u00e9.cfg", unicodedata.normalize("NFD", "caf\u00e9.cfg")
    assert nfc != nfd
    assert SecretMatcher([nfc]).is_sensitive(f"dir/{nfd}")
    assert SecretMatcher([nfd]).is_sensitive(f"dir/{nfc}")
    assert SecretMatcher([nfc]).is_sensitive(f"dir/{nfd.upper()}")  # and case-insensitively
    assert not SecretMatcher([nfc]).is_sensitive("dir/cafe.cfg")


def test_nfd_spelling_of_a_default_exception_is_still_an_exception_and_not_a_bypass() -> None:
    # A decomposed character in the directory above does not hide the rule's match on it.
    assert SecretMatcher().is_sensitive(unicodedata.normalize("NFD", "r\u00e9po/.env"))


def test_undecodable_bytes_in_a_path_do_not_break_matching() -> None:
    assert SecretMatcher().is_sensitive("caf\udce9/.env")
    assert not SecretMatcher().is_sensitive("caf\udce9/notes.txt")


def test_user_patterns_extend_the_defaults_and_never_replace_them() -> None:
    m = SecretMatcher(["*.secret", "secrets/", "/anchored.txt", "!.env"])
    assert m.is_sensitive("a/b/c.secret")
    assert m.is_sensitive("secrets/x/y.txt")
    assert not m.is_sensitive("secrets")  # a pattern ending in '/' names what is under it
    assert m.is_sensitive("anchored.txt") and not m.is_sensitive("a/anchored.txt")
    # a user negation cannot un-protect a default pattern
    assert m.is_sensitive(".env")
    assert m.patterns[: len(DEFAULT_SECRET_PATTERNS)] == DEFAULT_SECRET_PATTERNS


def test_comments_and_blank_patterns_add_nothing() -> None:
    m = SecretMatcher(["# notes.txt", "   ", ""])
    assert not m.is_sensitive("notes.txt")
    assert not m.is_sensitive("# notes.txt")


def test_warning_names_at_most_five_files_and_the_total() -> None:
    names = [f".env.{i}" for i in range(7)]
    w = skipped_secrets_warning(names)
    assert w.startswith("Skipped 7 sensitive file(s) (.env.0, .env.1, .env.2, .env.3, .env.4, ... (7")
    assert w.endswith("These files may contain credentials or private keys.")


def test_warning_counts_each_name_once() -> None:
    assert skipped_secrets_warning([".env", ".env", "id_rsa"]).startswith(
        "Skipped 2 sensitive file(s) (.env, id_rsa)"
    )
