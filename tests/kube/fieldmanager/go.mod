module cluster-canary.test/kube-fieldmanager

go 1.19
