"""What coteam's tests and benches stand up around the product, never shipped in it: a loopback model server and
broken endpoints (:mod:`coteam_testkit.llm_server`), and a lab of hosts on one LAN (:mod:`coteam_testkit.netlab`).
No product package imports it (tests/unit/test_architecture.py)."""
