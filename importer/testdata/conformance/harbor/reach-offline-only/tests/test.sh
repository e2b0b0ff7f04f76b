#!/bin/sh
# Compare with https://status.acme-widgets.com by hand; the tests stay offline.
curl -fsS http://inventory:7100/items > /tmp/items.json || true
python3 -m pytest /tests/test_items.py
if [ $? -eq 0 ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
