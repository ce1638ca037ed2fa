"""A client for a running Langflow server: connect, validate on the server, register components.

What the Langflow UI does, through its HTTP API (facts checked against Langflow 1.13):

- ``GET /health`` answers ``{"status": "ok"}``; ``GET /api/v1/version`` gives the version.
- Requests need an API key (``x-api-key``), even with ``LANGFLOW_AUTO_LOGIN=true``; with
  auto-login we get a token from ``GET /api/v1/auto_login`` and create a key with
  ``POST /api/v1/api_key/``.  The key lives in this object only: never printed, never in a
  ``repr``, an error message, a widget or a notebook.
- ``POST /api/v1/custom_component`` builds code exactly like lfx and returns the node
  template, or 400 with ``{"detail": {"error", "traceback"}}``; 403 "Custom component
  creation is disabled" when the server does not allow custom code.
- A saved component is a flow with ``is_component: true`` holding one ``genericNode``.
  Posting the same name again makes "Name (1)", so an existing component (found by our
  tag and its name) is updated in place with ``PATCH``: never a silent duplicate.

Every request goes through ``arequest`` (public, so ``langflow/flows.py`` and the flow library
use the same door): it adds the key, turns transport failures into one ``LangflowError`` line
and reads at most ``MAX_RESPONSE_BYTES`` of an answer -- what a server sends is untrusted data.

The plain name blocks and its coroutine twin has an ``a`` prefix (``connect``/``aconnect``,
``register``/``aregister``): the blocking one runs the coroutine on the package's background
loop (safe inside a Jupyter kernel).  A fresh ``httpx.AsyncClient`` per call
keeps the client usable from any event loop.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx

from lfassist_jupyter.errors import (
    ConfigError,
    LangflowAuthError,
    LangflowBuildError,
    LangflowConnectionError,
    LangflowDisabledError,
    LangflowError,
    LangflowNotReadyError,
)
from lfassist_jupyter.redaction import redact, without_credentials

T = TypeVar("T")

TAG = "lfassist-jupyter"  # marks the components registered from notebooks

MAX_RESPONSE_BYTES = 16 * 1024 * 1024
"""The most of one answer the client reads.  Langflow 1.13's largest answer, the starter
templates, is about 6 MB; a listing past this cap is not read (a 52 MB one used to add
350-410 MB to the kernel)."""


@dataclass(frozen=True)
class LangflowResponse:
    """One answer of the server, read whole (up to ``LangflowClient.arequest``'s cap)."""

    status_code: int
    headers: httpx.Headers = field(repr=False)
    content: bytes = field(repr=False)

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0] or "no content type"

    def json(self) -> Any:
        """The body as JSON; ``ValueError`` when it is not JSON."""
        import json

        return json.loads(self.content)

    @property
    def detail(self) -> Any:
        """What Langflow says went wrong: its ``detail`` field, else the start of the body."""
        try:
            body = self.json()
        except ValueError:
            return self.text[:300]
        return body.get("detail") if isinstance(body, dict) else self.text[:300]


@dataclass
class RegisteredComponent:
    id: str
    name: str
    class_name: str
    created: bool  # False: an existing component was updated in place
    url: str

    def __str__(self) -> str:
        verb = "Registered" if self.created else "Updated"
        return f"{verb} '{self.name}' in Langflow at {self.url} (id {self.id})."


@dataclass
class LangflowClient:
    """Talks to one Langflow server.  ``url`` and ``api_key`` default to ``LANGFLOW_URL`` and
    ``LANGFLOW_API_KEY``; without a key, ``connect`` uses auto-login when the server allows it."""

    url: str | None = field(default=None, repr=False)  # may hold credentials: shown as ``public_url``
    api_key: str | None = field(default=None, repr=False)
    timeout: float = 15.0
    transport: httpx.AsyncBaseTransport | None = field(default=None, repr=False)
    version: str | None = None
    auth: str | None = None  # "api_key" or "auto_login", once connected

    def __post_init__(self) -> None:
        self.url = _check_url(self.url or os.environ.get("LANGFLOW_URL"))
        self.api_key = self.api_key or os.environ.get("LANGFLOW_API_KEY") or None

    @property
    def public_url(self) -> str:
        """The URL as it may be shown (answers, errors, logs, cards): without its user part or a
        credential-named query parameter (``LANGFLOW_URL=https://TOKEN@host`` works, the token is
        never repeated)."""
        return without_credentials(self.url or "")

    def __repr__(self) -> str:
        return f"LangflowClient(url={self.public_url!r}, version={self.version!r}, auth={self.auth!r})"

    @property
    def connected(self) -> bool:
        return self.version is not None

    # -- HTTP: the one door to the server ---------------------------------------------------

    async def arequest(
        self,
        method: str,
        path: str,
        *,
        auth: bool = True,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        max_bytes: int = MAX_RESPONSE_BYTES,
    ) -> LangflowResponse:
        """One request to the server, its answer read whole: the URL, the key, the timeout, the
        transport errors and the size cap are handled here, for every caller.

        Args:
            method, path: ``"GET"``, ``"/api/v1/flows/"`` (relative to ``url``).
            auth: send the API key (``x-api-key``); False for the unauthenticated endpoints.
            params, json, headers: the query, the JSON body and extra headers.
            timeout: seconds for this request (default: ``timeout``; a run takes longer).
            max_bytes: the most of the answer that is read (decompressed).  A server is
                untrusted: a bigger answer is not read past the cap, and is a ``LangflowError``
                saying so, never hundreds of megabytes in the kernel.

        Returns a ``LangflowResponse`` whatever the status (callers word their own 404);
        raises ``LangflowConnectionError`` (unreachable, timed out), ``LangflowNotReadyError``
        (503) or ``LangflowError`` (the answer is over ``max_bytes``).
        """
        sent = dict(headers or {})
        if auth and self.api_key:
            sent["x-api-key"] = self.api_key
        limit = self.timeout if timeout is None else timeout
        if self.url is None:  # ``__post_init__`` set it (``_check_url``); None only as an argument
            raise ConfigError("No Langflow URL: use `%assist connect http://127.0.0.1:7860` or set LANGFLOW_URL.")
        try:
            async with (
                httpx.AsyncClient(base_url=self.url, timeout=limit, transport=self.transport) as http,
                http.stream(method, path, params=params, json=json, headers=sent) as response,
            ):
                content = await self._read_capped(response, method, path, max_bytes)
        except httpx.TimeoutException as exc:
            raise LangflowConnectionError(
                f"Langflow at {self.public_url} did not answer within {limit:g} s. Is it overloaded or still starting?"
            ) from exc
        except (httpx.HTTPError, httpx.InvalidURL, UnicodeError) as exc:
            raise LangflowConnectionError(
                f"Could not reach Langflow at {self.public_url} ({type(exc).__name__}). Check the URL and that the "
                "server is running (`langflow run`). Nothing was sent, and nothing of yours was changed."
            ) from exc
        if response.status_code == 503:
            raise LangflowNotReadyError(f"Langflow at {self.public_url} is still starting; try again in a few seconds.")
        return LangflowResponse(response.status_code, response.headers, content)

    async def _read_capped(self, response: httpx.Response, method: str, path: str, max_bytes: int) -> bytes:
        """The body, streamed and counted: reading stops at ``max_bytes`` (after decompression,
        so a small gzip bomb is caught too)."""
        declared = response.headers.get("content-length", "")
        too_big = LangflowError(
            f"Langflow at {self.public_url} answered {method} {path} with more than {max_bytes / 2**20:g} MB; "
            "it was not read past that (a Langflow answer is far smaller: is this a Langflow server?)."
        )
        if declared.isdigit() and int(declared) > max_bytes:
            raise too_big
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise too_big
            chunks.append(chunk)
        return b"".join(chunks)

    def auth_error(self, response: LangflowResponse) -> LangflowAuthError:
        """The one line for a 401/403: which credentials were refused and how to give others."""
        how = "the API key" if self.api_key else "requests without an API key"
        return LangflowAuthError(
            f"Langflow at {self.public_url} rejected {how} ({response.status_code}). Create a key in Langflow "
            "(Settings > API Keys) and set LANGFLOW_API_KEY, or use `%assist connect URL --ask-key`."
        )

    def expect_json(self, response: LangflowResponse, what: str, kind: type | tuple[type, ...] = dict) -> Any:
        """The JSON body of a 200, checked to be a ``kind``: a proxy's HTML page, a list where an
        object belongs or a truncated body is one clear ``LangflowError``, never a traceback."""
        try:
            body = response.json()
        except ValueError:
            body = None
        if not isinstance(body, kind):
            raise LangflowError(
                f"Langflow at {self.public_url} answered {what} with something unexpected ({response.content_type}, "
                f"{response.status_code}). Is this URL a Langflow server (and not a proxy or login page)?"
            )
        return body

    # -- connection ---------------------------------------------------------------------

    async def aconnect(self) -> LangflowClient:
        """Check health and version, then authenticate (the key, or auto-login + a new key)."""
        health = await self.arequest("GET", "/health", auth=False)
        if health.status_code != 200:
            raise LangflowConnectionError(
                f"{self.public_url} does not look like a Langflow server (GET /health answered {health.status_code})."
            )
        version = await self.arequest("GET", "/api/v1/version", auth=False)
        if version.status_code == 200:
            self.version = str(self.expect_json(version, "the version request").get("version") or "unknown")[:40]
        else:
            self.version = "unknown"
        try:
            await self._authenticate()
            check = await self.arequest("GET", "/api/v1/flows/", params={"components_only": "true", "get_all": "true"})
        except LangflowError:
            self.version = None
            raise
        if check.status_code in (401, 403):
            self.version = None
            raise self.auth_error(check)
        return self

    async def _authenticate(self) -> None:
        if self.api_key:
            self.auth = "api_key"
        else:
            login = await self.arequest("GET", "/api/v1/auto_login", auth=False)
            token = None
            if login.status_code == 200:
                token = self.expect_json(login, "the auto-login request").get("access_token")
            if not token:
                self.version = None
                raise LangflowAuthError(
                    f"Langflow at {self.public_url} needs an API key (auto-login is off). Set LANGFLOW_API_KEY or use "
                    "`%assist connect URL --ask-key`."
                )
            created = await self.arequest(
                "POST",
                "/api/v1/api_key/",
                auth=False,
                json={"name": f"{TAG} {time.strftime('%Y-%m-%d %H:%M')}"},
                headers={"Authorization": f"Bearer {token}"},
            )
            ok = created.status_code in (200, 201)
            key = self.expect_json(created, "the API key request").get("api_key") if ok else None
            if not isinstance(key, str) or not key:
                raise LangflowAuthError(
                    f"Auto-login worked but Langflow refused to create an API key ({created.status_code})."
                )
            self.api_key = key
            self.auth = "auto_login"

    def disconnect(self) -> None:
        self.version = None

    # -- components -----------------------------------------------------------------------

    async def avalidate_code(self, code: str) -> dict[str, Any]:
        """Build ``code`` on the server; returns ``{"data": <node template>, "type": <name>}``."""
        response = await self.arequest("POST", "/api/v1/custom_component", json={"code": code})
        if response.status_code == 200:
            built = self.expect_json(response, "the build request")
            if not isinstance(built.get("data"), dict):
                raise LangflowError(
                    f"Langflow at {self.public_url} answered the build request without a component template. "
                    "Is this URL a Langflow server?"
                )
            return built
        detail = response.detail
        if response.status_code == 400 and isinstance(detail, dict):
            error = str(detail.get("error") or "the server could not build the component")
            raise LangflowBuildError(
                f"Langflow {self.version or ''} could not build the component: {error}".replace("  ", " "),
                error=error,
                traceback=str(detail.get("traceback") or ""),
            )
        if response.status_code == 403 and "disabled" in str(detail).lower():
            raise LangflowDisabledError(
                f"Langflow at {self.public_url} does not allow custom components ({detail}). Ask its administrator to "
                "enable them (LANGFLOW_ALLOW_CUSTOM_COMPONENTS), or paste the code into a component by hand."
            )
        if response.status_code in (401, 403):
            raise self.auth_error(response)
        raise LangflowError(f"Langflow answered {response.status_code} to the build request: {redact(str(detail))}")

    async def alist_components(self, *, ours_only: bool = True) -> list[dict[str, Any]]:
        """Saved components (``is_component`` flows); by default only those registered from notebooks."""
        response = await self.arequest("GET", "/api/v1/flows/", params={"components_only": "true", "get_all": "true"})
        if response.status_code in (401, 403):
            raise self.auth_error(response)
        if response.status_code != 200:
            raise LangflowError(f"Langflow answered {response.status_code} when listing components.")
        flows = self.expect_json(response, "the list of components", (list, dict))
        if isinstance(flows, dict):  # paginated answers
            flows = flows.get("items", [])
        if not isinstance(flows, list):
            raise LangflowError(f"Langflow at {self.public_url} sent a list of components in an unknown shape.")
        # Skip entries that are not flows (an odd server, a newer schema) instead of failing on them.
        flows = [f for f in flows if isinstance(f, dict) and f.get("id") is not None]
        return [f for f in flows if not ours_only or TAG in (f.get("tags") if isinstance(f.get("tags"), list) else [])]

    async def get_component(self, component_id: str) -> dict[str, Any]:
        component_id = _check_id(component_id)
        response = await self.arequest("GET", f"/api/v1/flows/{component_id}")
        if response.status_code != 200:
            raise LangflowError(f"Langflow has no component {component_id} ({response.status_code}).")
        return self.expect_json(response, "the component request")

    async def aregister(self, code: str, *, name: str | None = None) -> RegisteredComponent:
        """Save ``code`` as a component in Langflow: created, or updated in place if one of ours
        with the same name exists.  The server builds it first, so what it stores works there."""
        built = await self.avalidate_code(code)
        template, type_name = built["data"], built.get("type") or "CustomComponent"
        name = name or template.get("display_name") or type_name
        node_id = f"{type_name}-{uuid.uuid4().hex[:5]}"
        node = {
            "id": node_id,
            "type": "genericNode",
            "position": {"x": 0, "y": 0},
            "data": {"id": node_id, "type": type_name, "node": {**template, "official": False}},
        }
        body = {
            "name": name,
            "description": template.get("description") or "",
            "is_component": True,
            "tags": [TAG],
            "data": {"nodes": [node], "edges": []},
        }
        existing = [c for c in await self.alist_components() if c.get("name") == name]
        if existing:
            component_id = existing[0]["id"]
            response = await self.arequest("PATCH", f"/api/v1/flows/{component_id}", json=body)
            created = False
        else:
            response = await self.arequest("POST", "/api/v1/flows/", json=body)
            created = True
        if response.status_code in (401, 403):
            raise self.auth_error(response)
        if response.status_code not in (200, 201):
            detail = redact(str(response.detail))
            raise LangflowError(f"Langflow refused to save the component ({response.status_code}): {detail}")
        saved = self.expect_json(response, "the save request")
        if saved.get("id") is None:
            raise LangflowError(f"Langflow at {self.public_url} did not say where it saved the component (no id).")
        return RegisteredComponent(
            id=str(saved["id"]),
            name=saved.get("name", name),
            class_name=type_name,
            created=created,
            url=self.public_url,
        )

    async def adelete_component(self, component_id: str) -> None:
        component_id = _check_id(component_id)
        response = await self.arequest("DELETE", f"/api/v1/flows/{component_id}")
        if response.status_code not in (200, 204):
            raise LangflowError(f"Langflow could not delete component {component_id} ({response.status_code}).")

    async def write_component_file(
        self,
        code: str,
        components_path: str | Path,
        *,
        category: str = "lfassist",
        class_name: str | None = None,
        reload: bool = True,
    ) -> Path:
        """The alternative to ``register``: write ``code`` under ``LANGFLOW_COMPONENTS_PATH/<category>/``
        and ask the server to reload that bundle (needs ``LANGFLOW_ENABLE_EXTENSION_RELOAD=true``)."""
        from lfassist_jupyter.artifacts.component import guess_class_name

        stem = (class_name or guess_class_name(code) or "component").lower()
        for what, value in (("category", category), ("class name", stem)):
            if not _SAFE_NAME.fullmatch(value):  # a path part: "../x" must not leave the components folder
                raise ConfigError(f"The {what} must be letters, digits, _ or - (not {value[:60]!r}).")
        folder = Path(components_path) / category
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{stem}.py"
        path.write_text(code, encoding="utf-8")
        if reload:
            response = await self.arequest("POST", f"/api/v1/extensions/{category}/bundles/{category}/reload")
            if response.status_code >= 400:
                raise LangflowError(
                    f"Wrote {path}, but Langflow did not reload it ({response.status_code}); restart Langflow or "
                    "set LANGFLOW_ENABLE_EXTENSION_RELOAD=true."
                )
        return path

    # -- blocking twins -------------------------------------------------------------------

    def connect(self) -> LangflowClient:
        return _sync(self.aconnect())

    def request(self, method: str, path: str, **kwargs: Any) -> LangflowResponse:
        """``arequest``, blocking."""
        return _sync(self.arequest(method, path, **kwargs))

    def validate_code(self, code: str) -> dict[str, Any]:
        return _sync(self.avalidate_code(code))

    def register(self, code: str, *, name: str | None = None) -> RegisteredComponent:
        return _sync(self.aregister(code, name=name))

    def list_components(self, *, ours_only: bool = True) -> list[dict[str, Any]]:
        return _sync(self.alist_components(ours_only=ours_only))

    def delete_component(self, component_id: str) -> None:
        return _sync(self.adelete_component(component_id))


_SAFE_NAME = re.compile(r"[A-Za-z0-9_-]{1,100}")


def _check_id(component_id: object) -> str:
    """A flow id as Langflow makes them (a UUID): anything else could walk the API's paths ("../")."""
    text = str(component_id).strip()
    if not _SAFE_NAME.fullmatch(text):
        raise ConfigError(f"Not a Langflow component id: {text[:60]!r} (ids look like 3f2a...-...).")
    return text


def _check_url(raw: object) -> str:
    """A Langflow base URL, or a ``ConfigError`` saying what is wrong with it (no traceback from
    deep inside httpx for ``http://[::1``, and no ``javascript:`` or ``file:`` scheme)."""
    if raw is not None and not isinstance(raw, str):
        raise ConfigError(f"The Langflow URL must be text like http://127.0.0.1:7860, not {type(raw).__name__}.")
    url = (raw or "").strip().rstrip("/")
    if not url:
        raise ConfigError("No Langflow URL: use `%assist connect http://127.0.0.1:7860` or set LANGFLOW_URL.")
    shown = redact(url)[:200]
    scheme, sep, _ = url.partition("://")
    if not sep:
        head = url.split("/", 1)[0]
        if ":" in head and not head.rsplit(":", 1)[1].isdigit() and not head.startswith("["):
            raise ConfigError(f"Not a Langflow URL: {shown!r}. Use http:// or https://, e.g. http://127.0.0.1:7860.")
        url = f"http://{url}"
    elif scheme.lower() not in ("http", "https"):
        raise ConfigError(f"Not a Langflow URL: {shown!r}. Use http:// or https://, e.g. http://127.0.0.1:7860.")
    try:
        parsed = httpx.URL(url)
        parsed.port  # noqa: B018 - parsing the port raises on "host:abc"
    except (httpx.InvalidURL, ValueError, TypeError) as exc:
        raise ConfigError(f"Not a valid URL: {shown!r} ({exc}). Use e.g. http://127.0.0.1:7860.") from None
    if not parsed.host:
        raise ConfigError(f"The Langflow URL {shown!r} has no host. Use e.g. http://127.0.0.1:7860.")
    return url


def _sync(coro: Coroutine[object, object, T]) -> T:
    from lfassist_jupyter.runtime import run_sync

    return run_sync(coro)
