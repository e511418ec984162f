# Two commands: `make run` serves the app (web + Celery worker), `make test` runs the whole suite.
# Both create .venv and install the pinned dependencies themselves.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
, := ,

.PHONY: run test lint bench clean test-real-server screenshots messages

$(VENV)/.runtime: requirements.txt
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

$(VENV)/.dev: requirements.txt requirements-dev.txt $(VENV)/.runtime
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	@touch $@

# A development run: debug on (unless DJANGO_DEBUG says otherwise), a random secret key kept under var/.
run: export DJANGO_DEBUG ?= 1
run: $(VENV)/.runtime
	$(PY) manage.py migrate --noinput
	$(PY) manage.py ensure_demo_user
	$(PY) scripts/serve.py

test: $(VENV)/.dev
	$(PY) scripts/run_tests.py

# Not part of `make test`: builds llama-cpp-python (about 30 minutes the first time, cached under var/) and
# runs a turn, a flush and a background extraction against its server. See docs/self-hosted-models.md.
test-real-server: $(VENV)/.runtime
	$(PY) scripts/real_server_test.py

# Refresh the README's pictures (docs/screenshots/); the browser tests of `make test` save theirs to a temporary folder.
screenshots: $(VENV)/.dev
	MEMORA_SCREENSHOTS_DIR=$(CURDIR)/docs/screenshots $(PY) scripts/run_tests.py \
		tests/e2e/test_chat_browser.py::test_markdown_reply_and_screenshots \
		tests/e2e/test_memory_flow.py::test_learn_review_edit_delete_restore_and_switch_off \
		tests/e2e/test_chinese.py::test_memory_notice_demo_and_settings_pages_are_chinese

# Refresh the translation catalogues (locale/) from the code, then compile them. Needs GNU gettext
# (xgettext, msgmerge, msgfmt; Debian: apt-get install gettext). New entries come in untranslated:
# translate them in locale/zh_Hans/LC_MESSAGES/*.po, run this again, and commit the .po and .mo files.
# `python scripts/catalogues.py` lists what is left; tests/test_catalogues.py fails until nothing is.
MESSAGES_IGNORE := -i ".venv/*" -i "tests/*" -i "bench/*" -i "var/*" -i "scripts/*" -i "memory/evals/*"
messages: $(VENV)/.dev
	$(PY) manage.py makemessages -l zh_Hans --no-obsolete --add-location=file $(MESSAGES_IGNORE)
	$(PY) manage.py makemessages -d djangojs -l zh_Hans --no-obsolete --add-location=file $(MESSAGES_IGNORE)
	$(PY) manage.py compilemessages -l zh_Hans -i ".venv"
	-$(PY) scripts/catalogues.py

lint: $(VENV)/.dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy .

# Every benchmark in one run, each printing the machine's load beside its figures (docs/benchmarks.md). A
# missed target is printed and the run goes on (on a loaded machine wall times miss); a benchmark that fails
# stops it. `make bench BENCH_QUICK=1`: fewer turns and smaller accounts, for a first look.
Q = $(if $(BENCH_QUICK),$(1),$(2))
bench: $(VENV)/.dev
	$(PY) bench/turn_latency.py --missed-ok $(call Q,--turns 10 --long-turns 10 --streams 20,)
	$(PY) bench/recall_latency.py $(call Q,--turns 10 --streams 10,--turns 20)
	$(PY) bench/extraction.py $(call Q,--rounds 2 --users 200,)
	$(PY) bench/turn_writes.py $(call Q,--rounds 20 --sizes 1000$(,)50000,)
	$(PY) bench/recall.py --missed-ok $(call Q,--rounds 10,)
	$(PY) bench/long_conversation.py $(call Q,--turns 60 --sync-turns 30,)
	$(PY) bench/search.py $(call Q,--messages 20000 --others 2000 --queries 10 --turns 20,)

clean:
	rm -rf $(VENV) var
