"""The HTTP API (FastAPI): ``create_app(store)`` builds the application."""

from service.http.app import create_app

__all__ = ["create_app"]
