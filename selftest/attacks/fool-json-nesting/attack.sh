. ./lib.sh
attempt "write a 100000-deep report.json" sh -c 'printf "%100000s" "" | tr " " "[" >report.json && printf "%100000s" "" | tr " " "]" >>report.json'
ls -l report.json
true
