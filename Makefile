# Business Suite — `make help` lists the targets.
SHELL := bash
export GOTOOLCHAIN := local
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)
# Measured: the first `make build` with an empty Go build cache took 20
# CPU-minutes (README), i.e. about 10 minutes on an idle 2-core machine.
FIRST_BUILD := 10 minutes
# Pinned tool versions (run with `go run tool@version`, nothing to install).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
WORKFLOWCHECK := go.temporal.io/sdk/contrib/tools/workflowcheck@v0.6.0
# The API reference viewer at /docs: swagger-ui-dist from the npm registry,
# checked in under api/swagger-ui/dist (builds need no network). To upgrade,
# change both lines (the integrity is `npm view swagger-ui-dist@<v> dist.integrity`)
# and run `make swagger-ui`.
SWAGGER_UI_VERSION := 5.35.0
SWAGGER_UI_INTEGRITY := sha512-U06rpMtW9V3XPGOBeamTUSr0Z09jMX4IJuANpE/EZbAhw0G8CgwrzU4YmXkn/h0wCDNsXdGarTNNHC3sU8yVUQ==
SWAGGER_UI_FILES := LICENSE NOTICE swagger-ui-bundle.js swagger-ui-bundle.js.LICENSE.txt swagger-ui.css
# Packages run one at a time: several of them start Temporal servers on
# free ports, and two test binaries racing for the same port crash one.
TEST_FLAGS ?= -p 1

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  \033[36m%-13s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

# `build`, `test`, `e2e` and `bench` compile with -trimpath, so a compiled package does
# not depend on the directory of the checkout: a fresh clone (as CI makes)
# or a second worktree reuses what the Go build cache holds instead of
# compiling every package of the suite again, and `build` reuses what `go
# test` compiled (other flags, such as CGO_ENABLED=0, would miss that cache
# and compile the embedded Temporal server again). `release` is the static
# build the image uses.
.PHONY: build
build: ## Build bin/suite for this machine (reuses the Go build cache)
	@echo "building bin/suite: the first build on a machine compiles the embedded Temporal server (about $(FIRST_BUILD) on 2 cores); later builds reuse the Go build cache and take seconds"
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/suite ./cmd/suite

.PHONY: release
release: ## Build a static bin/suite (no cgo, trimmed paths), as deploy/Dockerfile does
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/suite ./cmd/suite

.PHONY: run
run: build ## Run the whole suite in one process (embedded Temporal + UI, SQLite in ./.data)
	./bin/suite dev

# Packages whose tests start no Temporal server run with the race detector
# (it needs cgo, i.e. a C compiler; without one they run without it). The
# others start a Temporal server per test, which the detector slows too much.
RACE_PKGS := ./activities/... ./api/web/... ./internal/database/... ./internal/netguard/... ./models/... ./workflows/...
# gotestsum runs go test -json: one line a package, the output of a failed
# test, and the JSON kept in bin/ for the slowest-tests table at the end.
GOTESTSUM := gotest.tools/gotestsum@v1.13.0
TEST_RUN = $(GO) run $(GOTESTSUM) --format pkgname-and-test-fails --jsonfile

.PHONY: test
test: ## Run all tests (SQLite always; PostgreSQL too when it answers on 127.0.0.1:5432 or TEST_DATABASE_URL is set), then list the 20 slowest
	@mkdir -p bin && rm -f bin/test-*.json; status=0; race=-race; \
	if [ "$$($(GO) env CGO_ENABLED)" != 1 ]; then race=; echo "no C compiler (CGO_ENABLED=0): $(RACE_PKGS) run without the race detector"; fi; \
	echo "go test $(TEST_FLAGS) -trimpath $$race -timeout 20m $(RACE_PKGS)"; \
	$(TEST_RUN) bin/test-race.json -- $(TEST_FLAGS) -trimpath $$race -timeout 20m $(RACE_PKGS) || status=1; \
	echo "go test $(TEST_FLAGS) -trimpath -timeout 20m (every other package)"; \
	$(TEST_RUN) bin/test-rest.json -- $(TEST_FLAGS) -trimpath -timeout 20m $$($(GO) list ./... | grep -vxF -f <($(GO) list $(RACE_PKGS))) || status=1; \
	echo; echo "The 20 slowest tests (go test -json output in bin/test-race.json, bin/test-rest.json):"; \
	cat bin/test-race.json bin/test-rest.json | $(GO) run $(GOTESTSUM) tool slowest --threshold 0s --num 20; \
	exit $$status

# The tests whose real runs (real Temporal server, real activities and
# databases) `make histories` saves: together they complete every workflow
# type the worker registers (TestEveryWorkflowTypeHasASavedHistory checks).
HISTORY_PKGS := ./api/ ./api/crm/ ./api/helpdesk/ ./api/billing/ ./worker/
HISTORY_RUN := ^(TestCreateOrganizationRegistersWithIdentity|TestMembersInvitesSeatsAndOwners|TestIntakeRunsItsDatabaseStepsAsLocalActivities|TestInvitationNeedsItsTokenAndTheInvitedAddress|TestSolvedTicketsCloseAutomatically|TestLeavingSolvedCancelsTheAutoCloseTimer|TestNotificationRecordedAndPushed|TestSubscriptionChangeEndToEnd|TestAIJobsRunEndToEndWithTheLocalProvider|TestEmailThreadRoundTrip|TestEmailChannelSettings|TestWebhooksDeliverADealsChangesSignedAndInOrder|TestSLABreachIsRecordedToldAndEscalated|TestAutomationEscalatesAVIPTicket|TestFieldDeletionRewritesEveryBatch|TestMergeDuplicates|TestImportAndExportContacts|TestErasureLeavesNothingFindableByTheAddress)$$

.PHONY: histories
histories: ## Regenerate workflows/testdata/histories (replay tests) from real runs — never for a change running workflows must survive (docs/decisions.md)
	rm -f workflows/testdata/histories/*.json
	SUITE_WRITE_HISTORIES=$(CURDIR)/workflows/testdata/histories $(GO) test $(TEST_FLAGS) -count=1 -timeout 20m -run '$(HISTORY_RUN)' $(HISTORY_PKGS)
	$(GO) test -count=1 -run 'TestSavedHistoriesReplay|TestEveryWorkflowTypeHasASavedHistory' ./workflows/
	@ls -l workflows/testdata/histories/

.PHONY: screenshots
screenshots: ## Save docs/console-change.png from the staff console's browser test (needs Chromium)
	SUITE_SCREENSHOTS=$(CURDIR)/docs $(GO) test -count=1 -run '^TestConsoleInABrowser$$' ./api/console/
	@ls -l docs/console-change.png

.PHONY: readme-check
readme-check: ## Run README.md's shell blocks, as pasted, against a freshly started suite (CI runs it)
	.ci/readme-check

.PHONY: lint
lint: ## go vet, staticcheck and workflowcheck
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(WORKFLOWCHECK) ./workflows/...

.PHONY: bench
bench: build ## Load benchmark: the API next to pgbench on the same statements (needs PostgreSQL, pgbench, wrk)
	@command -v wrk >/dev/null || { echo "installing wrk (Debian package)"; apt-get install -y -q wrk >/dev/null; }
	$(GO) run -trimpath ./cmd/bench -binary bin/suite $(BENCH_FLAGS)

.PHONY: e2e
e2e: build ## Production topology test: suite temporal (or a 2-node cluster: E2E_FLAGS='-temporal postgres'), 2 api, 2 worker processes on PostgreSQL, with faults (needs PostgreSQL)
	$(GO) run -trimpath ./cmd/e2e -binary bin/suite $(E2E_FLAGS)

.PHONY: migrate
migrate: build ## Apply database migrations (DATABASE_URL, or the dev SQLite file)
	./bin/suite migrate

.PHONY: swagger-ui
swagger-ui: ## Fetch the pinned Swagger UI bundle from npm into api/swagger-ui/dist (needs npm)
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
	npm pack --silent --pack-destination "$$tmp" swagger-ui-dist@$(SWAGGER_UI_VERSION) >/dev/null && \
	tgz="$$tmp/swagger-ui-dist-$(SWAGGER_UI_VERSION).tgz" && \
	got="sha512-$$(openssl dgst -sha512 -binary "$$tgz" | base64 -w0)" && \
	if [ "$$got" != "$(SWAGGER_UI_INTEGRITY)" ]; then echo "swagger-ui-dist $(SWAGGER_UI_VERSION): integrity $$got, want $(SWAGGER_UI_INTEGRITY)" >&2; exit 1; fi && \
	tar -xzf "$$tgz" -C "$$tmp" && \
	rm -rf api/swagger-ui/dist && mkdir -p api/swagger-ui/dist && \
	for f in $(SWAGGER_UI_FILES); do cp "$$tmp/package/$$f" api/swagger-ui/dist/; done && \
	echo "api/swagger-ui/dist: swagger-ui-dist $(SWAGGER_UI_VERSION)"

.PHONY: clean
clean: ## Remove build output and the dev data directory
	rm -rf bin .data
