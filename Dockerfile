# The Substrate service image: serves the HTTP API against $SUBSTRATE_DATABASE_URL.
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY service ./service
COPY projections ./projections
COPY migrations ./migrations
RUN pip install --no-cache-dir .
EXPOSE 8000
CMD ["substrate", "serve", "--host", "0.0.0.0", "--port", "8000"]
