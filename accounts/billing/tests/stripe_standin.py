"""A stand-in for the payment provider's API on loopback: the official library is pointed at it
(`STRIPE_API_BASE`), so everything up to the HTTP boundary is the real code."""

from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer

from conftest import json_server


@dataclass
class StandIn:
    base: str
    calls: list[tuple[str, str, dict]] = field(default_factory=list)
    invoices: list[dict] = field(default_factory=list)
    # The subscriptions as the provider holds them now, by id (what a retrieve answers).
    subscriptions: dict[str, dict] = field(default_factory=dict)
    failing: bool = False

    def paths(self) -> list[str]:
        return [f"{method} {path}" for method, path, _ in self.calls]


def _answers(stand_in: StandIn, method: str, path: str, params: dict) -> tuple[int, dict]:
    if stand_in.failing:
        return 400, {"error": {"type": "invalid_request_error", "message": "No such price: 'price_gone'"}}
    customers = sum(1 for m, p, _ in stand_in.calls if (m, p) == ("POST", "/v1/customers"))
    if (method, path) == ("POST", "/v1/customers"):
        return 200, {"id": f"cus_{customers}", "object": "customer", "metadata": {}}
    if (method, path) == ("POST", "/v1/checkout/sessions"):
        return 200, {"id": "cs_test_1", "object": "checkout.session", "url": "https://checkout.test/cs_test_1"}
    if (method, path) == ("POST", "/v1/billing_portal/sessions"):
        return 200, {"id": "bps_1", "object": "billing_portal.session", "url": "https://portal.test/bps_1"}
    if (method, path) == ("GET", "/v1/invoices"):
        mine = [invoice for invoice in stand_in.invoices if invoice["customer"] == params.get("customer")]
        return 200, {"object": "list", "url": "/v1/invoices", "has_more": False, "data": mine}
    if method == "GET" and path.startswith("/v1/subscriptions/"):
        subscription = stand_in.subscriptions.get(path.removeprefix("/v1/subscriptions/"))
        if subscription is None:
            error = {"type": "invalid_request_error", "code": "resource_missing", "message": "No such subscription"}
            return 404, {"error": error}
        return 200, {"object": "subscription", **subscription}
    return 404, {"error": {"type": "invalid_request_error", "message": f"Unrecognized request URL ({path})"}}


def start() -> tuple[StandIn, ThreadingHTTPServer]:
    def answer(method, path, params, headers):
        stand_in.calls.append((method, path, params))
        status, payload = _answers(stand_in, method, path, params)
        return status, payload, {"Request-Id": "req_standin"}

    server = json_server(answer)
    stand_in = StandIn(base=f"http://127.0.0.1:{server.server_address[1]}")
    return stand_in, server
