#!/usr/bin/env bash
# The typical order of use of the sdx API with curl: (1) read the study design, (2) enrol a patient,
# (3) send visit forms, (4) read the data back page by page and incrementally, (5) send a FHIR record.
# Needs bash, curl and sed only.
#
#   KEY=sdx_… BASE_URL=http://localhost:8080 STUDY=DEMO bash examples/curl/walkthrough.sh
set -euo pipefail

: "${KEY:?set KEY to the API key (make run prints one)}"
BASE_URL="${BASE_URL:-http://localhost:8080}"
STUDY="${STUDY:-DEMO}"
SITE="${SITE:-01}"
CONSENT_WAIT="${CONSENT_WAIT:-600}"   # seconds to wait for the site team to record consent
API="$BASE_URL/api/v1/studies/$STUDY"
HERE="$(cd "$(dirname "$0")" && pwd)"

# One call: prints the body, and fails the script on any status but the expected one.
call() { # call <expected status> <curl arguments…>
  local expected=$1 out status
  shift
  out=$(curl -sS -w '\n%{http_code}' -H "Authorization: Bearer $KEY" "$@")
  status=${out##*$'\n'}
  out=${out%$'\n'*}
  if [[ "$status" != "$expected" ]]; then
    echo "expected $expected, got $status: $out" >&2
    exit 1
  fi
  printf '%s' "$out"
}
# The first string member of that name in a JSON answer; empty when it is null or absent.
member() { grep -o "\"$1\" *: *\"[^\"]*\"" | head -n 1 | sed 's/.*: *"\(.*\)"$/\1/' || true; }

echo "1. Study design"
design=$(call 200 "$API")
echo "   $(printf '%s' "$design" | member name)"
consent_required=$(printf '%s' "$design" | grep -o '"consent_required" *: *true' || true)

echo "2. Enrol a patient at site $SITE"
enrolled=$(call 201 -H 'Content-Type: application/json' \
  -d "{\"site\":\"$SITE\",\"sex\":\"female\",\"birth_year\":1968,\"enrolled_on\":\"2026-03-02\"}" "$API/patients")
subject=$(printf '%s' "$enrolled" | member subject)
echo "   enrolled $subject"

screening="{\"subject\":\"$subject\",\"visit\":\"screening\",\"form\":\"vs\",\"values\":{\"vsdate\":\"2026-02-16\",\"sbp\":\"138\",\"dbp\":\"86\",\"hr\":\"72\",\"weight\":\"81.5\"}}"
if [[ -n "$consent_required" ]]; then
  # Consent is recorded by the site team in the portal, not through the API. Until it is, a record of the
  # patient is refused with consent_missing; validate_only asks without saving anything.
  echo "   waiting for consent of patient $subject (the site team records it; for the demo study:"
  echo "   node bin/sdx.js patient consent $STUDY $subject --given 2026-02-16)"
  deadline=$((SECONDS + CONSENT_WAIT))
  while :; do
    check=$(call 200 -H 'Content-Type: application/json' -d "{\"records\":[$screening]}" "$API/records?validate_only=true")
    grep -q '"consent_missing"' <<< "$check" || break
    if ((SECONDS > deadline)); then echo "no consent after $CONSENT_WAIT s" >&2; exit 1; fi
    sleep 2
  done
  echo "   consent recorded"
fi

echo "3. Send visit forms"
results=$(call 200 -H 'Content-Type: application/json' -d "{\"records\":[
  $screening,
  {\"subject\":\"$subject\",\"visit\":\"baseline\",\"form\":\"vs\",\"values\":{\"vsdate\":\"2026-03-02\",\"sbp\":\"232\",\"dbp\":\"95\",\"hr\":\"78\"}}
]}" "$API/records")
echo "   $(printf '%s' "$results" | sed -n 's/.*"counts" *: *\({[^}]*}\).*/\1/p')"

echo "4. Read the data back"
pages=0
after=""
while :; do
  page=$(call 200 -G --data-urlencode "subject=$subject" --data-urlencode "limit=1" ${after:+--data-urlencode "after=$after"} "$API/records")
  pages=$((pages + 1))
  [[ $pages == 1 ]] && watermark=$(printf '%s' "$page" | member watermark)
  after=$(printf '%s' "$page" | member next)
  [[ -z "$after" ]] && break
done
echo "   read $pages pages (limit=1: one record a page); watermark $watermark"
call 200 -H 'Content-Type: application/json' -d "{\"records\":[
  {\"subject\":\"$subject\",\"visit\":\"baseline\",\"form\":\"vs\",\"update\":true,\"values\":{\"sbp\":\"182\"}}
]}" "$API/records" > /dev/null
changed=$(call 200 -G --data-urlencode "subject=$subject" --data-urlencode "updated_since=$watermark" "$API/records")
# Rows may come again in an incremental load: a real loader upserts them by id.
echo "   changed since the watermark: $(printf '%s' "$changed" | grep -o '"id" *: *[0-9]*' | wc -l | tr -d ' ') record(s); removed: $(printf '%s' "$changed" | sed -n 's/.*"removed" *: *\(\[[^]]*\]\).*/\1/p')"
queries=$(call 200 -G --data-urlencode "subject=$subject" "$API/queries")
echo "   open and closed queries: $(printf '%s' "$queries" | grep -o '"origin" *: *"[a-z_]*"' | wc -l | tr -d ' ')"

echo "5. Send a FHIR record for review"
import=$(call 201 -H 'Content-Type: application/fhir+json' --data-binary "@$HERE/../data/fhir-record.json" "$API/fhir?subject=$subject&mode=review")
echo "   import $(printf '%s' "$import" | member import) is $(printf '%s' "$import" | member status): $(printf '%s' "$import" | member review_url)"
echo "done: patient $subject"
