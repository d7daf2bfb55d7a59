# filegate as a streamable-HTTP endpoint in a container.
#
#   docker build -t filegate .
#   docker run --rm -p 127.0.0.1:8000:8000 -e FILEGATE_TOKEN="$(openssl rand -hex 32)" \
#       -v "$PWD:/workspace" --user "$(id -u):$(id -g)" filegate
#
# Inside the container the server binds 0.0.0.0, so it refuses to start without FILEGATE_TOKEN.
# Clients connect to http://127.0.0.1:8000/mcp with "Authorization: Bearer <token>". Extra
# flags go after the image name (for example --read-only). --user lets the server write files
# owned by you in the mounted directory; without it, it runs as the image's user 10001.
#
# Over stdio (a client starts the container; flags after the image name win over the HTTP
# defaults below, no token needed; ":ro" and --read-only for read-only use):
#   docker run -i --rm -v "$PWD:/workspace" --user "$(id -u):$(id -g)" filegate --transport stdio
#   docker run -i --rm -v "$PWD:/workspace:ro" filegate --transport stdio --read-only
#
# The write history (what UndoWrite restores) is kept in /state (XDG_STATE_HOME), which any
# --user can write: with --user the home folder is "/", which no user but root can write. Add
# -v filegate-state:/state to keep the history across containers.
FROM python:3.11-slim-bookworm

# libmagic for content sniffing (python-magic); nothing else comes from apt. Not pinned to a
# Debian revision: the base image's tag fixes the release (bookworm), and Debian's archive keeps
# only the current revision of a package, so a pinned one stops building at its next security
# update.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends libmagic1 \
 && rm -rf /var/lib/apt/lists/*

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The package from this repository (ripgrep comes with it as a wheel).
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install . && rm -rf /src

# /state: the history's folder, writable by whichever user runs the container (sticky, as /tmp:
# each user's own folder inside stays its own, owner-only).
RUN useradd --uid 10001 --create-home --shell /usr/sbin/nologin filegate \
 && mkdir /workspace /state && chown filegate:filegate /workspace && chmod 1777 /state
ENV XDG_STATE_HOME=/state
# Numeric, so a host (or Kubernetes' runAsNonRoot) can tell it is not root without the image's
# /etc/passwd.
USER 10001:10001
WORKDIR /workspace
VOLUME ["/workspace"]
EXPOSE 8000

# The slim image has no curl: Python asks /healthz (no token needed, says only "ok").
HEALTHCHECK --interval=30s --timeout=5s --start-period=20s --retries=3 \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]

ENTRYPOINT ["filegate", "--transport", "http", "--host", "0.0.0.0", "--port", "8000", "--workdir", "/workspace"]
