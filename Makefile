# The project's commands. `make run` and `make test` are all a newcomer needs.
SHELL := /bin/bash
.DEFAULT_GOAL := help
MOCHA := npx mocha

.PHONY: help install gen gen-check lint build migrate run test test-suites test-unit test-integration test-api test-browser contract chromium xmllint bench clean

help:
	@echo "make run    install, build, migrate, load the demo study and start the service (embedded PostgreSQL)"
	@echo "make test   the whole suite: contract checks, unit, integration and API tests"
	@echo "make contract   the scenarios (typed client, FHIR pull, examples) through the Prism contract proxy"
	@echo "make bench  benchmarks of the compiled service on real PostgreSQL, each against its floor (bench/README.md)"
	@echo "make gen | gen-check | lint | build | migrate | clean"

node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

install: node_modules/.installed

## Types generated from the contract, and the study design's from its JSON Schema; never edited by hand. The typed client (clients/typescript)
## carries its own copy, so the package stands alone; in it a member with a default stays optional,
## because a client may leave it out (the service sees it filled in, hence the server's default).
CLIENT_TYPES := npx openapi-typescript spec/openapi.yaml -o clients/typescript/src/schema.ts --default-non-nullable false
gen: install
	npx openapi-typescript spec/openapi.yaml -o generated/openapi.d.ts
	$(CLIENT_TYPES)
	npx tsx scripts/generateDesignTypes.ts

gen-check: install
	npx openapi-typescript spec/openapi.yaml -o generated/openapi.d.ts --check
	$(CLIENT_TYPES) --check
	npx tsx scripts/generateDesignTypes.ts --check

lint: install
	npx redocly lint spec/openapi.yaml
	npx tsc --noEmit -p .
	npx eslint --max-warnings 0 .
	npx knip

build: gen
	rm -rf dist
	npx tsc -p tsconfig.build.json

migrate: build
	node bin/sdx.js migrate

run: build
	@set -o pipefail; node bin/sdx.js demo --json | node dist/scripts/printDemo.js
	node --max-semi-space-size=16 --heap-growing-percent=100 dist/src/server.js

test: gen-check lint test-suites test-browser

test-suites: test-unit test-integration test-api

test-unit: install
	$(MOCHA) --config test/.mocharc.unit.json

test-integration: install
	$(MOCHA) --config test/.mocharc.integration.json

## embeddedServer.test.ts starts, joins and kills whole PostgreSQL servers and service processes of its own data
## folders: it runs in a mocha process of its own (in the one with every other API file its last test hung twice).
test-api: install xmllint
	$(MOCHA) --config test/.mocharc.api.json
	$(MOCHA) --config test/.mocharc.embedded.json

## The staff portal and the API reference page in headless Chromium (playwright-core drives Debian's browser; npm downloads none).
test-browser: install chromium
	$(MOCHA) --config test/.mocharc.browser.json

## The third-party contract check on its own (make test runs it too): the typed-client scenario, the FHIR
## pull and the examples go through Stoplight Prism's validating proxy, and fail on any request or response
## that breaks spec/openapi.yaml.
contract: install
	$(MOCHA) --import=tsx --require test/helpers/rootHooks.ts --timeout 60000 test/api/typedClient.test.ts test/api/fhirPull.test.ts test/api/examples.test.ts

## Debian's Chromium, installed only when missing (a fresh machine or CI); the machine's user is root.
chromium:
	@test -x /usr/bin/chromium || (apt-get update && apt-get install -y --no-install-recommends chromium)

## xmllint (Debian's libxml2-utils), installed only when missing: the ODM export is validated with it against CDISC's schemas.
xmllint:
	@command -v xmllint >/dev/null || (apt-get update && apt-get install -y --no-install-recommends libxml2-utils)

## Benchmarks: the compiled service (dist/) on PostgreSQL, results in bench/results.json and .md. Not tests: make test never depends on speed.
bench: build
	npx tsx bench/run.ts

clean:
	rm -rf dist test-output
