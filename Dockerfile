# transcriber: the service on the embedded default, data in /data.
# docker build -t transcriber . && docker run -p 8080:8080 -v transcriber-data:/data transcriber
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    TRANSCRIBER_STORAGE_DATA_DIR=/data \
    TRANSCRIBER_HTTP_HOST=0.0.0.0

WORKDIR /app
COPY pyproject.toml README.md constraints.txt ./
COPY src ./src
# The versions CI tested (constraints.txt), not whatever is newest today.
RUN pip install -c constraints.txt ".[all]" \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin transcriber \
    && mkdir -p /data && chown transcriber /data && chmod 700 /data

USER transcriber
VOLUME ["/data"]
EXPOSE 8080
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=30s --timeout=5s CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8080/health').status == 200 else 1)"
CMD ["transcriber", "serve"]
