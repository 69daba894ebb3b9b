import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: slower tests with real servers (CI runs them too)")
    config.addinivalue_line("markers", "real_llm: opt-in tests against a real local model (JUCODE_REAL_LLM=1)")
