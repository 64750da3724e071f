#!/usr/bin/env python3
"""The typical order of use of the sdx API in Python, standard library only: (1) read the study design,
(2) enrol a patient, (3) send visit forms, (4) read the data back page by page and incrementally,
(5) send a FHIR record.

    KEY=sdx_... BASE_URL=http://localhost:8080 STUDY=DEMO python3 examples/python/walkthrough.py
"""
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

KEY = os.environ.get("KEY") or sys.exit("set KEY to the API key (make run prints one)")
BASE_URL = os.environ.get("BASE_URL", "http://localhost:8080").rstrip("/")
STUDY = os.environ.get("STUDY", "DEMO")
SITE = os.environ.get("SITE", "01")
CONSENT_WAIT = int(os.environ.get("CONSENT_WAIT", "600"))  # seconds to wait for the site team to record consent
API = f"{BASE_URL}/api/v1/studies/{urllib.parse.quote(STUDY)}"
FHIR_RECORD = Path(__file__).resolve().parent.parent / "data" / "fhir-record.json"


class ApiError(Exception):
    """A refused request: the HTTP status and the problem body. Branch on problem["code"]."""

    def __init__(self, status, problem):
        super().__init__(f"{status} {problem.get('code')}: {problem.get('detail')}")
        self.status = status
        self.problem = problem


def call(method, url, query=None, body=None, content_type="application/json"):
    """One call; returns the parsed JSON answer, raises ApiError for a refusal."""
    if query:
        url += "?" + urllib.parse.urlencode({k: v for k, v in query.items() if v is not None})
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Authorization": f"Bearer {KEY}"})
    if data is not None:
        request.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(request) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        raise ApiError(error.code, json.load(error)) from None


def read_pages(kind, **filters):
    """Every page of a read call: each `next` goes back as `after`, with the same filters, until it is null."""
    after = None
    while True:
        page = call("GET", f"{API}/{kind}", {**filters, "after": after})
        yield page
        after = page["next"]
        if after is None:
            return


print("1. Study design")
design = call("GET", API)
print(f"   {design['study']['name']}: sites {', '.join(s['number'] for s in design['sites'])}, {len(design['forms'])} forms")

print(f"2. Enrol a patient at site {SITE}")
subject = call("POST", f"{API}/patients", body={"site": SITE, "sex": "female", "birth_year": 1968, "enrolled_on": "2026-03-02"})["subject"]
print(f"   enrolled {subject}")

screening = {"subject": subject, "visit": "screening", "form": "vs",
             "values": {"vsdate": "2026-02-16", "sbp": "138", "dbp": "86", "hr": "72", "weight": "81.5"}}
if design["study"]["consent_required"]:
    # Consent is recorded by the site team in the portal, not through the API. Until it is, a record of
    # the patient is refused with consent_missing; validate_only asks without saving anything.
    print(f"   waiting for consent of patient {subject} (the site team records it; for the demo study:")
    print(f"   node bin/sdx.js patient consent {STUDY} {subject} --given 2026-02-16)", flush=True)
    deadline = time.monotonic() + CONSENT_WAIT
    while call("POST", f"{API}/records", {"validate_only": "true"}, {"records": [screening]})["results"][0]["code"] == "consent_missing":
        if time.monotonic() > deadline:
            sys.exit(f"no consent after {CONSENT_WAIT} s")
        time.sleep(2)
    print("   consent recorded")

print("3. Send visit forms")
result = call("POST", f"{API}/records", body={"records": [
    screening,
    {"subject": subject, "visit": "baseline", "form": "vs", "values": {"vsdate": "2026-03-02", "sbp": "232", "dbp": "95", "hr": "78"}},
]})
for r in result["results"]:
    print(f"   record {r['index']}: {r['status']} {r['code']} - {r['message']}")

print("4. Read the data back")
copy = {}  # the loader's own copy of the records, by id
pages = list(read_pages("records", subject=subject, limit=1))
for page in pages:
    copy.update({r["id"]: r for r in page["records"]})
watermark = pages[0]["watermark"]
print(f"   read {len(pages)} pages (limit=1: one record a page); watermark {watermark}")
call("POST", f"{API}/records", body={"records": [
    {"subject": subject, "visit": "baseline", "form": "vs", "update": True, "values": {"sbp": "182"}},
]})
# An incremental load: rows may come again, so they are upserted by id; patients in `removed` are deleted.
for page in read_pages("records", subject=subject, updated_since=watermark):
    gone = {r["subject"] for r in page["removed"]}
    copy = {i: r for i, r in copy.items() if r["subject"] not in gone}
    copy.update({r["id"]: r for r in page["records"]})
baseline = next(r for r in copy.values() if r["visit"] == "baseline")
print(f"   after the incremental load: {len(copy)} records, baseline sbp {baseline['values']['sbp']}")
queries = [q for page in read_pages("queries", subject=subject) for q in page["queries"]]
print(f"   queries: {[(q['field'], q['status']) for q in queries]}")

print("5. Send a FHIR record for review")
fhir = call("POST", f"{API}/fhir", {"subject": subject, "mode": "review"}, FHIR_RECORD.read_bytes(), "application/fhir+json")
print(f"   import {fhir['import']} is {fhir['status']} with {fhir['counts']['values']} values: {fhir['review_url']}")
print(f"done: patient {subject}")
