# Sourced by the device scripts: on a CUDA machine, install the wheels carried in .whl (the
# device image lacks pydantic; see the device README) into /tmp/site, and put them and the
# repository on PYTHONPATH. Reads DEVICE; exits 3 when the wheels do not install.
if [ "$DEVICE" = cuda ] && [ -d .whl ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || exit 3
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
