# The kubetrain operator image: `kubetrain operator` as a non-root user on a read-only root
# filesystem (manifests/base/deployment.yaml mounts an emptyDir on /tmp for the webhook
# certificates).
#
#   docker build -t kubetrain:0.1.0 .
#
# Two stages: the wheel is built with the build tooling, the runtime stage gets only the installed
# package and its dependencies (no compilers, no pip cache, no source tree).

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY kubetrain ./kubetrain
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/*.whl && rm -rf /wheels \
    && groupadd --system --gid 65532 kubetrain \
    && useradd --system --uid 65532 --gid 65532 --home-dir /nonexistent --shell /usr/sbin/nologin kubetrain
# Numeric, so the kubelet can enforce runAsNonRoot without resolving the name.
USER 65532:65532
EXPOSE 8080 8081 9443
ENTRYPOINT ["kubetrain", "operator"]
