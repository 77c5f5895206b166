# The compiled heartbeat lane (coordinator/fastlane) needs a C compiler to build and none to
# run: a build stage makes the wheel, and the image installs it without gcc.
FROM python:3.11-slim AS build
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml README.md setup.py ./
COPY protocol ./protocol
COPY coordinator ./coordinator
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
    && python -c "import sys, zipfile, glob; names = zipfile.ZipFile(glob.glob('/wheels/*.whl')[0]).namelist(); sys.exit(not any('fastlane/_heartbeats' in n for n in names))"

FROM python:3.11-slim

# The daemon runs as uid 10001: a bind-mounted data directory must be writable by it
# (e.g. `chown 10001 ./data` on the host), and it is kept private (0700).
RUN useradd --create-home --uid 10001 coordinator
WORKDIR /app

# Dependencies first, in their own layer: a change to the source does not reinstall them.
COPY pyproject.toml README.md ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
    && pip install --no-cache-dir -r /tmp/requirements.txt && rm /tmp/requirements.txt

# The package as the build stage made it, the compiled lane inside (the build fails without).
COPY --from=build /wheels /wheels
COPY docker/healthcheck.py ./healthcheck.py
RUN pip install --no-cache-dir --no-deps /wheels/*.whl && rm -r /wheels \
    && python -c "from coordinator.fastlane.batch import compiled; assert compiled()" \
    && mkdir -p /data && chown coordinator /data

USER coordinator
# The console (read-only unless --http-admin) on 8080; --http-listen or the variable moves it.
ENV GROUP_COORDINATOR_LISTEN=0.0.0.0:9092 \
    GROUP_COORDINATOR_HTTP_LISTEN=0.0.0.0:8080 \
    GROUP_COORDINATOR_DATA_DIR=/data
VOLUME /data
# In front of a broker (serve --upstream HOST:PORT, or GROUP_COORDINATOR_UPSTREAM): one port
# per upstream broker from 19092 (docs/upstream.md); publish as many as the upstream has.
ENV GROUP_COORDINATOR_UPSTREAM_BROKER_PORTS=19092
EXPOSE 9092 8080 19092-19095
# Healthy = answers on the first listener the daemon was given, on its command line, in its
# environment or in its --config file (ApiVersions on PLAINTEXT).
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s CMD ["python", "/app/healthcheck.py"]
ENTRYPOINT ["group-coordinator"]
CMD ["serve"]
