# The face engine sidecar: docker build -f deploy/face.Dockerfile -t trustd-face .
# It listens on 127.0.0.1 only: run it in the network namespace of its
# trustd node (compose: network_mode "service:<node>"; Kubernetes: a
# second container of the node's pod) and give both the same secret.
FROM node:20-bookworm-slim
WORKDIR /opt/trustd/face-sidecar
COPY identity/face/sidecar/package.json identity/face/sidecar/package-lock.json identity/face/sidecar/.npmrc ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force
COPY identity/face/sidecar/server.mjs ./
USER node
ENV FACE_SIDECAR_PORT=7310
ENTRYPOINT ["node", "server.mjs"]
