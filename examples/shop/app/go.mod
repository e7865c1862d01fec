module example.com/shop

go 1.24.0
