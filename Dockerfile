FROM python:3.11-slim

RUN useradd --create-home --uid 10001 coordinator
WORKDIR /app
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY coordinator ./coordinator
RUN pip install --no-cache-dir . && mkdir -p /data && chown coordinator /data

USER coordinator
ENV GROUP_COORDINATOR_LISTEN=0.0.0.0:9092 \
    GROUP_COORDINATOR_DATA_DIR=/data
VOLUME /data
EXPOSE 9092
# Healthy = answers a Kafka request (ListGroups) on the port it listens on.
HEALTHCHECK --interval=10s --timeout=5s --start-period=5s \
    CMD sh -c 'group-coordinator groups list --json --bootstrap "127.0.0.1:${GROUP_COORDINATOR_LISTEN##*:}" >/dev/null'
ENTRYPOINT ["group-coordinator"]
CMD ["serve"]
