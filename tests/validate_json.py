"""Validates a pt2diff JSON document against a schema in docs/: python validate_json.py SCHEMA CMD..."""
import json
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:  # a user's own Python (setup.sh --python) need not have it: ctest reports a skip
    print("jsonschema is not installed in", sys.executable, "- skipped")
    sys.exit(77)

schema_path, *command = sys.argv[1:]
with tempfile.NamedTemporaryFile(suffix=".json") as out:
    cmd = [a.replace("{json}", out.name) for a in command]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode not in (0, 1):
        sys.exit(f"command failed ({proc.returncode}): {' '.join(cmd)}")
    text = open(out.name).read() if "{json}" in " ".join(command) else proc.stdout
document = json.loads(text)
jsonschema.validate(document, json.load(open(schema_path)))
print("valid:", " ".join(command))
