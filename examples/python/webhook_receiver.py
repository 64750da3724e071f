#!/usr/bin/env python3
"""A receiver of sdx's webhooks, with Python's standard library only.

Checks each delivery's Standard Webhooks signature (HMAC-SHA256 with the subscription's secret over
"<webhook-id>.<webhook-timestamp>.<body>", base64, in the "webhook-signature" header as "v1,<signature>")
and its timestamp (within five minutes), skips a delivery it has already handled (deliveries come at least
once) and prints the event. The payload names what happened but carries no values: a real receiver would
now read the details with its API key.

    SDX_WEBHOOK_SECRET=whsec_... PORT=9000 python3 examples/python/webhook_receiver.py

Answers 204 to a delivery it accepted and 400 to one whose signature or timestamp does not hold.
"""
import base64
import hashlib
import hmac
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, HTTPServer

TOLERANCE_SECONDS = 300


def verify(secret, headers, body):
    """The event of a delivery whose signature and timestamp hold; ValueError otherwise."""
    delivery_id = headers.get("webhook-id")
    timestamp = headers.get("webhook-timestamp")
    signatures = headers.get("webhook-signature")
    if not delivery_id or not timestamp or not signatures:
        raise ValueError("missing webhook headers")
    if not timestamp.isdigit() or abs(time.time() - int(timestamp)) > TOLERANCE_SECONDS:
        raise ValueError("webhook-timestamp is too far from now")
    key = base64.b64decode(secret[len("whsec_"):] if secret.startswith("whsec_") else secret)
    signed = f"{delivery_id}.{timestamp}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    for entry in signatures.split(" "):
        version, _, signature = entry.partition(",")
        if version == "v1" and hmac.compare_digest(signature, expected):
            return json.loads(body)
    raise ValueError("no valid signature")


class Receiver(BaseHTTPRequestHandler):
    secret = ""
    handled = set()  # a real receiver keeps the ids in its database, beside what it did

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        try:
            event = verify(self.secret, self.headers, body)
        except ValueError as refusal:
            print(f"refused a delivery: {refusal}", file=sys.stderr, flush=True)
            self.send_response(400)
            self.end_headers()
            return
        delivery_id = self.headers["webhook-id"]
        if delivery_id not in self.handled:
            self.handled.add(delivery_id)
            print(json.dumps({"id": delivery_id, "type": event["type"], "data": event["data"]}), flush=True)
        self.send_response(204)
        self.end_headers()

    def log_message(self, *args):
        pass  # one line per event on stdout is enough


def main():
    secret = os.environ.get("SDX_WEBHOOK_SECRET")
    if not secret:
        sys.exit("Set SDX_WEBHOOK_SECRET to the secret sdx showed when the subscription was made (whsec_...).")
    Receiver.secret = secret
    port = int(os.environ.get("PORT", "9000"))
    server = HTTPServer(("127.0.0.1", port), Receiver)
    print(f"listening on http://127.0.0.1:{port}/", file=sys.stderr, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
