#!/usr/bin/env bash
# Installs the peer benchmark's packages (bench/peers.py: fla-core, sglang and the few modules
# their kernels import) from wheels in WHEEL_DIR into TARGET, for a GPU machine that reaches no
# registry; wheels of packages the interpreter already imports are skipped. Where IPython is
# missing (sglang imports IPython.display), TARGET gets a stand-in with what sglang and
# matplotlib ask of it. Then: PYTHONPATH=TARGET python3 bench/peers.py ...
#   bench/install_peer_wheels.sh WHEEL_DIR TARGET      (wheels: pip download --no-deps ...)
set -uo pipefail
dir=${1:?usage: bench/install_peer_wheels.sh WHEEL_DIR TARGET}
target=${2:?usage: bench/install_peer_wheels.sh WHEEL_DIR TARGET}
py=${PYTHON:-python3}
wheels=()
for f in "$dir"/*.whl; do
  [ -e "$f" ] || continue
  name=$(basename "$f"); name=${name%%-*}
  case $name in # the module a wheel provides, where its name differs (sglang: always this wheel's version)
    fla_core) mod=fla ;; sglang) mod=_never_importable ;; pyzmq) mod=zmq ;; attrs) mod=attr ;;
    apache_tvm_ffi) mod=tvm_ffi ;; *) mod=$name ;;
  esac
  "$py" -c "import $mod" 2> /dev/null || wheels+=("$f")
done
echo "installing: ${wheels[*]:-nothing}"
if [ ${#wheels[@]} -gt 0 ]; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$target" "${wheels[@]}" ||
    exit 1
fi
if ! PYTHONPATH="$target" "$py" -c "import IPython" 2> /dev/null; then
  mkdir -p "$target/IPython"
  printf 'version_info = (9, 0, 0)\n\n\ndef get_ipython():\n    return None\n' > "$target/IPython/__init__.py"
  printf 'class HTML:\n    def __init__(self, data=None):\n        self.data = data\n\n\ndef display(*objs, **kw):\n    pass\n' \
    > "$target/IPython/display.py"
  echo "IPython: a stand-in in $target"
fi
