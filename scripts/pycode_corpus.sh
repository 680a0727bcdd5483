# Sourced by the default-model scripts: the Python sources jf's default code model trains on, and the ones it
# is judged on. Training: the Python 3.11 standard library plus the packages Debian installed under
# /usr/lib/python3/dist-packages, except the held-out ones. Held out (never trained on, not the standard
# library): oauthlib and PyYAML, read if present (python3-oauthlib, python3-yaml).
pycode_stdlib=/usr/lib/python3.11
pycode_site=/usr/lib/python3/dist-packages
pycode_heldout_names="oauthlib yaml _yaml"
pycode_corpus=("$pycode_stdlib")
pycode_heldout=()
if [ -d "$pycode_site" ]; then
  for d in "$pycode_site"/*/; do
    pycode_dir=$(basename "$d")
    case " $pycode_heldout_names " in *" $pycode_dir "*) [ "$pycode_dir" = _yaml ] || pycode_heldout+=("${d%/}"); continue ;; esac
    case "$pycode_dir" in *.egg-info | *.dist-info | __pycache__) continue ;; esac
    pycode_corpus+=("${d%/}")
  done
fi
