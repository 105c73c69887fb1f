"""The interactive API docs (/docs, /redoc) served from files installed with the package: no CDN, no network."""

from __future__ import annotations

from pathlib import Path

import fastapi_offline
from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

__all__ = ["ASSETS", "install_docs"]

# Swagger UI 5 and ReDoc as the fastapi-offline package ships them (a dependency kept for exactly this).
ASSETS = Path(fastapi_offline.__file__).resolve().parent / "static"
_PREFIX = "/docs/assets"


def install_docs(app: FastAPI, *, title: str = "Substrate API") -> None:
    """Serve /docs (Swagger UI) and /redoc over ``app``'s /openapi.json, their scripts from ``ASSETS``."""
    app.mount(_PREFIX, StaticFiles(directory=ASSETS), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url="/openapi.json",
            title=f"{title} - docs",
            swagger_js_url=f"{_PREFIX}/swagger-ui-bundle.js",
            swagger_css_url=f"{_PREFIX}/swagger-ui.css",
            swagger_favicon_url=f"{_PREFIX}/favicon.png",
        )

    @app.get("/redoc", include_in_schema=False)
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url="/openapi.json",
            title=f"{title} - ReDoc",
            redoc_js_url=f"{_PREFIX}/redoc.standalone.js",
            redoc_favicon_url=f"{_PREFIX}/favicon.png",
            with_google_fonts=False,
        )
