"""deploy/kubernetes.yaml (issue 13): parsed and checked against what filegate accepts.

No cluster here: the manifest is read with PyYAML and each fact the replicas rely on is checked
against filegate's own settings model and command line (the env variables it names are real
settings that validate, the flags parse, the probes hit the health path, the Services select
the pods, only the handshake-era Service is sticky).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from filegate.cli import build_parser
from filegate.server.http import HEALTH_PATH
from filegate.settings import Settings

MANIFEST = Path(__file__).resolve().parents[2] / "deploy" / "kubernetes.yaml"
DOCKERFILE = MANIFEST.parents[1] / "Dockerfile"


@pytest.fixture(scope="module")
def docs() -> dict[tuple[str, str], dict[str, Any]]:
    parsed = [d for d in yaml.safe_load_all(MANIFEST.read_text()) if d]
    by_kind = {(d["kind"], d["metadata"]["name"]): d for d in parsed}
    assert len(by_kind) == len(parsed), "two objects of one kind share a name"
    return by_kind


def _container(docs: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    (container,) = docs[("Deployment", "filegate")]["spec"]["template"]["spec"]["containers"]
    return container


def test_the_deployment_runs_several_replicas_that_share_one_volume(docs: dict[tuple[str, str], Any]) -> None:
    spec = docs[("Deployment", "filegate")]["spec"]
    assert spec["replicas"] >= 2
    assert spec["selector"]["matchLabels"].items() <= spec["template"]["metadata"]["labels"].items()
    mounts = {m["mountPath"]: m for m in _container(docs)["volumeMounts"]}
    volumes = {v["name"]: v for v in spec["template"]["spec"]["volumes"]}
    workspace, state = mounts["/workspace"], mounts["/state"]
    # The lock files (state) sit beside the workspace on the same shared volume, not in it.
    assert workspace["name"] == state["name"] and workspace["subPath"] != state["subPath"]
    claim = volumes[workspace["name"]]["persistentVolumeClaim"]["claimName"]
    assert docs[("PersistentVolumeClaim", claim)]["spec"]["accessModes"] == ["ReadWriteMany"]


def test_every_replica_gets_the_shared_state_key_and_token_from_a_secret(
    docs: dict[tuple[str, str], Any],
) -> None:
    env = {e["name"]: e for e in _container(docs)["env"]}
    for name in ("FILEGATE_STATE_KEY", "FILEGATE_TOKEN"):
        assert "value" not in env[name], f"{name} must come from a Secret, not the manifest"
        assert env[name]["valueFrom"]["secretKeyRef"]["name"]
    assert env["XDG_STATE_HOME"]["value"] == "/state"


def test_the_environment_and_flags_are_settings_filegate_accepts(
    docs: dict[tuple[str, str], Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    container = _container(docs)
    fields = set(Settings.model_fields)
    for e in container["env"]:
        if e["name"].startswith("FILEGATE_"):
            assert e["name"].removeprefix("FILEGATE_").lower() in fields, e["name"]
            # Secrets stand in with values of the right shape.
            monkeypatch.setenv(e["name"], e.get("value", "s" * 32))
    args = build_parser().parse_args(
        ["--transport", "http", "--host", "0.0.0.0", "--workdir", str(tmp_path), *container["args"]]
    )
    settings = Settings(**{k: v for k, v in vars(args).items() if v is not None})
    assert settings.state_key is not None and settings.token is not None
    # Every name a Service answers to passes the Host check.
    for service in ("filegate", "filegate-handshake"):
        assert f"{service}:8000" in settings.allowed_hosts
        assert f"{service}.filegate.svc.cluster.local:8000" in settings.allowed_hosts
    # The image serves HTTP on the port the manifest names.
    assert '"--port", "8000"' in DOCKERFILE.read_text()
    assert container["ports"] == [{"name": "http", "containerPort": 8000}]


def test_probes_ask_the_health_path(docs: dict[tuple[str, str], Any]) -> None:
    container = _container(docs)
    for probe in ("readinessProbe", "livenessProbe"):
        assert container[probe]["httpGet"] == {"path": HEALTH_PATH, "port": "http"}


def test_only_the_handshake_era_service_is_sticky(docs: dict[tuple[str, str], Any]) -> None:
    labels = docs[("Deployment", "filegate")]["spec"]["template"]["metadata"]["labels"]
    stateless, handshake = (
        docs[("Service", "filegate")]["spec"],
        docs[("Service", "filegate-handshake")]["spec"],
    )
    for spec in (stateless, handshake):
        assert spec["selector"].items() <= labels.items()
        assert spec["ports"][0]["targetPort"] == "http"
    assert stateless["sessionAffinity"] == "None"
    assert handshake["sessionAffinity"] == "ClientIP"
    # Sticky for as long as filegate keeps an idle handshake-era session.
    idle = Settings.model_fields["session_idle_timeout"].default
    assert handshake["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"] == idle
