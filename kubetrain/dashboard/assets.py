"""The front end: plain HTML, CSS and JavaScript shipped in the package (``static/``), served as is.

No build step and nothing from a CDN: the files are read once, at start, from the installed
package; a name that is not one of them is 404 (no path is ever joined from a request).
"""

from __future__ import annotations

from importlib import resources

from aiohttp import web

CONTENT_TYPES = {
    ".html": "text/html",
    ".js": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
    ".png": "image/png",
}


class Assets:
    def __init__(self, package: str = "kubetrain.dashboard", folder: str = "static") -> None:
        self.files: dict[str, tuple[bytes, str]] = {}
        root = resources.files(package) / folder
        for entry in root.iterdir():
            suffix = entry.name[entry.name.rfind(".") :]
            if entry.is_file() and suffix in CONTENT_TYPES:
                self.files[entry.name] = (entry.read_bytes(), CONTENT_TYPES[suffix])

    def __contains__(self, name: str) -> bool:
        return name in self.files

    def response(self, name: str) -> web.Response:
        body, content_type = self.files[name]
        charset = "utf-8" if content_type.startswith("text/") or content_type.endswith("+xml") else None
        return web.Response(body=body, content_type=content_type, charset=charset)
