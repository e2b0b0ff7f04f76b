. ./lib.sh
hook='import os; open(os.path.join(os.environ.get("PWD", "."), "proof.txt"), "a").write("PROOF python hook ran\n")'
attempt "plant conftest.py" sh -c "printf '%s\n' '$hook' 'def pytest_collection_modifyitems(items):' '    items.clear()' >conftest.py"
attempt "plant sitecustomize.py and usercustomize.py" sh -c "printf '%s\n' '$hook' >sitecustomize.py && cp sitecustomize.py usercustomize.py"
attempt "plant a .pth hook" sh -c "printf 'import os; %s\n' '$hook' >evil.pth"
attempt "plant pytest.ini" sh -c 'printf "[pytest]\naddopts = -p no:cacheprovider\n" >pytest.ini'
attempt "plant in ~/.local" sh -c 'mkdir -p /home/agent/.local/lib/python3/site-packages && cp sitecustomize.py /home/agent/.local/lib/python3/site-packages/'
true
