"""What the tests share besides the fixtures of ``tests/conftest.py``: stand-ins for models
(:mod:`.fakes`), a TCP proxy that plays a restarting server (:mod:`.proxy`), headless
Chromium (:mod:`.browser`), the explanation tests' data (:mod:`.explain_data`), the kill
tests' scenarios (:mod:`.kill_scenarios`) and worker process (:mod:`.worker_process`), and
the backend markers (:mod:`.markers`)."""
