"""Price catalog (cloud offerings) and owned/purchasable hardware."""
