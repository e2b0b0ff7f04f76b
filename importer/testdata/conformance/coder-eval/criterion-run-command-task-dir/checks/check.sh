grep -qx ok "$1"
