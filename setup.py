"""Install jucode: ``pip install .`` gives the ``jucode`` console script."""

import re
from pathlib import Path

from setuptools import find_packages, setup

here = Path(__file__).parent
version = re.search(r'__version__ = "([^"]+)"', (here / "jucode" / "__init__.py").read_text()).group(1)

setup(
    name="jucode",
    version=version,
    description="A threaded, synchronous coding-agent engine speaking the jucode serve protocol",
    packages=find_packages(include=["jucode", "jucode.*"]),
    package_data={"jucode": ["tokendata/*", "demo/*.json"]},
    include_package_data=True,
    python_requires=">=3.10",
    install_requires=[l.strip() for l in (here / "requirements.txt").read_text().splitlines()
                      if l.strip() and not l.startswith("#")],
    entry_points={"console_scripts": ["jucode=jucode.cli:main"]},
)
