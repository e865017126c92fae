
Ba_scaleJg2