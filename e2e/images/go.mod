module randomsecret-e2e-images

go 1.24
