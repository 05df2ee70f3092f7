"""The demo team's application and its tests (run by tests/e2e/test_demo_team.py)."""
